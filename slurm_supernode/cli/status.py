"""`snrun status JOB`: the attempts of a job chain."""

from __future__ import annotations

import argparse

from slurm_supernode.cli.options import add_job_argument, add_jobs_dir_arguments, job_dir_of


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Show the chain of attempts of an snrun job (job id or job directory)."
    add_job_argument(p)
    p.add_argument("--json", action="store_true", help="print the chain as JSON")
    add_jobs_dir_arguments(p)


def run(ns: argparse.Namespace) -> int:
    from slurm_supernode.runtime.status import chain_summary, format_chain, to_json

    job_dir = job_dir_of(ns)
    summary = chain_summary(job_dir)
    print(to_json(summary) if ns.json else format_chain(summary))
    return 0
