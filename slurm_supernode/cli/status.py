"""`snrun status JOB`: the attempts of a job chain."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Show the chain of attempts of an snrun job (job id or job directory)."
    p.add_argument("job", metavar="JOB", help="Slurm job id of any attempt, or the job directory")
    p.add_argument("--json", action="store_true", help="print the chain as JSON")
    p.add_argument(
        "--jobs-dir",
        metavar="DIR",
        help="where job directories are (default $SNRUN_JOBS_DIR, else the site's paths.jobs_dir)",
    )
    p.add_argument("--site", help="site name or file whose paths.jobs_dir to use ($SNRUN_SITE)")


def run(ns: argparse.Namespace) -> int:
    from slurm_supernode.launch.jobdir import find_job_dir, jobs_root
    from slurm_supernode.runtime.status import chain_summary, format_chain, to_json

    job_dir = find_job_dir(jobs_root(ns.jobs_dir, ns.site), ns.job)
    summary = chain_summary(job_dir)
    print(to_json(summary) if ns.json else format_chain(summary))
    return 0
