"""`snrun metrics JOB`: a job's figures now (per node: devices, node, step time, communication
share against the plan, slow marks), as text, JSON or an HTML report."""

from __future__ import annotations

import argparse

from slurm_supernode.cli.options import add_job_argument, add_jobs_dir_arguments, int_range


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Show what an snrun job is doing: per node the newest device figures (utilization, "
        "memory, temperature, power), CPU, memory and NIC rates, the ranks' step times, the "
        "communication share against the plan and slow-node marks. Figures nobody measured "
        "say 'unknown'."
    )
    add_job_argument(p)
    p.add_argument("--attempt", type=int_range(0), metavar="N", help="attempt (default: newest)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument(
        "--html",
        metavar="FILE",
        help="write the job's HTML report (plots over time, self-contained) to FILE",
    )
    p.add_argument(
        "--window",
        type=int_range(1),
        metavar="STEPS",
        help="step time: the median of each rank's last STEPS steps (default 20)",
    )
    add_jobs_dir_arguments(p)


def run(ns: argparse.Namespace) -> int:
    import json

    from slurm_supernode.api.metrics import job_metrics, job_report

    if ns.html:
        from slurm_supernode.fsutil import check_output_path, write_atomic

        out = check_output_path(ns.html, "--html")
        page = job_report(
            ns.job, attempt=ns.attempt, window=ns.window, jobs_dir=ns.jobs_dir, site=ns.site
        )
        write_atomic(out, page)
        print(f"report written to {out}")
        return 0
    summary = job_metrics(
        ns.job, attempt=ns.attempt, window=ns.window, jobs_dir=ns.jobs_dir, site=ns.site
    )
    if ns.json:
        print(json.dumps(summary.to_dict(), indent=2))
    else:
        from slurm_supernode.observe.metrics_text import format_summary

        print(format_summary(summary))
    return 0
