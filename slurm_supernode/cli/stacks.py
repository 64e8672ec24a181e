"""`snrun stacks` (in a job): py-spy stack dumps of the job's ranks on this node."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from slurm_supernode.jobenv import JobEnvironment


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Print (or write to --out) a py-spy stack dump of every rank of the job on this node. "
        "Run on a node of the job; `snrun attach JOB --py-spy` starts it there."
    )
    p.add_argument(
        "--job-id", default=JobEnvironment.from_environ().job_id, help="default: this job"
    )
    p.add_argument("--rank", type=int, action="append", help="only this rank (repeatable)")
    p.add_argument("--out", help="write rank<R>.txt files into this folder")


def run(ns: argparse.Namespace) -> int:
    from slurm_supernode.errors import InputError
    from slurm_supernode.forensics.stacks import collect

    if not ns.job_id:
        raise InputError("no job id: not inside a job", where="--job-id")
    node = JobEnvironment.from_environ().nodename
    found, text = collect(
        str(ns.job_id), node, set(ns.rank) if ns.rank else None, Path(ns.out) if ns.out else None
    )
    if ns.out is None:
        sys.stdout.write(text)
    if not found and not ns.rank:
        print(f"snrun: no rank of job {ns.job_id} runs on {node or 'this node'}", file=sys.stderr)
    return 0
