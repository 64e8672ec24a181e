"""`snrun cancel JOB`: end the whole chain (every job id it used), and record it."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Cancel every job of an snrun job chain and mark the chain cancelled."
    p.add_argument("job", metavar="JOB", help="Slurm job id of any attempt, or the job directory")
    p.add_argument(
        "--jobs-dir",
        metavar="DIR",
        help="where job directories are (default $SNRUN_JOBS_DIR, else the site's paths.jobs_dir)",
    )
    p.add_argument("--site", help="site name or file whose paths.jobs_dir to use ($SNRUN_SITE)")


def run(ns: argparse.Namespace) -> int:
    from slurm_supernode.launch.jobdir import find_job_dir, jobs_root
    from slurm_supernode.runtime import ledger
    from slurm_supernode.runtime.status import chain_summary
    from slurm_supernode.slurm.jobs import cancel

    job_dir = find_job_dir(jobs_root(ns.jobs_dir, ns.site), ns.job)
    # Mark first, so a supervisor that is just starting sees the chain is over.
    ledger.append(job_dir, "final", state="CANCELLED", reason="snrun cancel")
    ids = chain_summary(job_dir)["job_ids"]
    for job_id in ids:
        cancel(job_id)
    print(f"cancelled job chain {job_dir.name} ({', '.join(map(str, ids)) or 'no job ids'})")
    return 0
