"""`snrun status [JOB]`: the attempts of a job chain, or the user's recent chains."""

from __future__ import annotations

import argparse

from slurm_supernode.cli.options import add_jobs_dir_arguments, int_range, job_dir_of


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Show the chain of attempts of an snrun job (job id or job directory); without JOB, "
        "your most recent job chains."
    )
    p.add_argument(
        "job",
        nargs="?",
        metavar="JOB",
        help="Slurm job id of any attempt, or the job directory (default: list recent chains)",
    )
    p.add_argument("--json", action="store_true", help="print the chain (or the list) as JSON")
    p.add_argument(
        "-n",
        "--last",
        type=int_range(1),
        default=10,
        metavar="N",
        help="without JOB: how many recent chains to list (default 10)",
    )
    add_jobs_dir_arguments(p)


def run(ns: argparse.Namespace) -> int:
    import json

    from slurm_supernode.launch.jobdir import jobs_root, own_job_dirs
    from slurm_supernode.runtime.status import (
        chain_summary,
        format_chain,
        format_recent,
        recent_chains,
        to_json,
    )

    if ns.job is None:
        root = jobs_root(ns.jobs_dir, ns.site)
        rows = recent_chains(own_job_dirs(root)[: ns.last])
        print(json.dumps(rows, indent=2) if ns.json else format_recent(rows, root))
        return 0
    summary = chain_summary(job_dir_of(ns))
    print(to_json(summary) if ns.json else format_chain(summary))
    return 0
