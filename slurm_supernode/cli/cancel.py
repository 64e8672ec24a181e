"""`snrun cancel JOB`: end the whole chain (every job id it used), and record it."""

from __future__ import annotations

import argparse

from slurm_supernode.cli.options import add_job_argument, add_jobs_dir_arguments, job_dir_of


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Cancel every job of an snrun job chain and mark the chain cancelled. A chain that "
        "has already ended is left as it ended (a note, exit 0)."
    )
    add_job_argument(p)
    add_jobs_dir_arguments(p)


def run(ns: argparse.Namespace) -> int:
    from slurm_supernode.api.cancel import cancel_chain

    job_dir = job_dir_of(ns)
    from slurm_supernode.api.sweep import sweep_of

    sweep = sweep_of(job_dir)
    if sweep is not None:  # every task's chain, the array and what the tasks resubmitted
        print(sweep.cancel().note(f"sweep {job_dir.name}"))
        return 0
    outcome = cancel_chain(job_dir)
    print(outcome.note(f"job chain {job_dir.name}"))
    return 0
