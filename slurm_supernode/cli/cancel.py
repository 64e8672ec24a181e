"""`snrun cancel JOB`: end the whole chain (every job id it used), and record it."""

from __future__ import annotations

import argparse

from slurm_supernode.cli.options import add_job_argument, add_jobs_dir_arguments, job_dir_of


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Cancel every job of an snrun job chain and mark the chain cancelled."
    add_job_argument(p)
    add_jobs_dir_arguments(p)


def run(ns: argparse.Namespace) -> int:
    from slurm_supernode.runtime import ledger
    from slurm_supernode.runtime.status import chain_summary
    from slurm_supernode.slurm.jobs import cancel

    job_dir = job_dir_of(ns)
    # Mark first, so a supervisor that is just starting sees the chain is over.
    ledger.append(job_dir, "final", state="CANCELLED", reason="snrun cancel")
    ids = chain_summary(job_dir)["job_ids"]
    for job_id in ids:
        cancel(job_id)
    print(f"cancelled job chain {job_dir.name} ({', '.join(map(str, ids)) or 'no job ids'})")
    return 0
