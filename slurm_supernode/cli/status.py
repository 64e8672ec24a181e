"""`snrun status [JOB]`: the attempts of a job chain, or the user's recent chains."""

from __future__ import annotations

import argparse

from slurm_supernode.cli.options import add_jobs_dir_arguments, int_range


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Show the chain of attempts of an snrun job (job id or job directory); without JOB, "
        "your most recent job chains."
    )
    p.add_argument(
        "job",
        nargs="?",
        metavar="JOB",
        help="Slurm job id of any attempt, a sweep's array job id (a table of its tasks) or "
        "ARRAY_TASK, or the job directory (default: list recent chains)",
    )
    p.add_argument("--json", action="store_true", help="print the chain (or the list) as JSON")
    p.add_argument(
        "-n",
        "--last",
        type=int_range(1),
        default=10,
        metavar="N",
        help="without JOB: how many recent chains (and sweeps) to list (default 10)",
    )
    add_jobs_dir_arguments(p)


def run(ns: argparse.Namespace) -> int:
    import json

    from slurm_supernode.chain.status import format_chain, format_recent

    if ns.job is None:
        from slurm_supernode.api.status import recent

        root, rows = recent(ns.last, jobs_dir=ns.jobs_dir, site=ns.site)  # newest first
        print(json.dumps(rows, indent=2) if ns.json else format_recent(rows, root))
        return 0
    from slurm_supernode.api.status import chain_status, find_job_dir
    from slurm_supernode.api.sweep import sweep_of

    sweep = sweep_of(find_job_dir(ns.job, jobs_dir=ns.jobs_dir, site=ns.site))
    if sweep is not None:  # an array job id: the sweep as one table, a line per task
        from slurm_supernode.chain.array_status import format_sweep

        swept = sweep.status()
        print(json.dumps(swept, indent=2) if ns.json else format_sweep(swept))
        return 0
    summary = chain_status(ns.job, jobs_dir=ns.jobs_dir, site=ns.site)
    print(json.dumps(summary, indent=2) if ns.json else format_chain(summary))
    return 0
