"""`snrun logs JOB`: the per-rank logs of a job's attempts, rank-prefixed when merged."""

from __future__ import annotations

import argparse

from slurm_supernode.cli.options import add_job_argument, add_jobs_dir_arguments, job_dir_of


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Show the per-rank logs of an snrun job (kept per attempt in the job directory, across "
        "restarts, requeues and resubmissions). Default: every rank of the newest attempt."
    )
    add_job_argument(p)
    p.add_argument("--attempt", type=int, help="attempt number (default: the newest)")
    p.add_argument("--node", help="only the ranks of this node")
    p.add_argument("--rank", type=int, action="append", help="only this rank (repeatable)")
    p.add_argument("--stream", choices=("both", "stdout", "stderr"), default="both")
    p.add_argument("--tail", type=int, metavar="N", help="the last N lines of each rank")
    p.add_argument(
        "-f", "--follow", action="store_true", help="keep printing new lines (and attempts)"
    )
    add_jobs_dir_arguments(p)


def run(ns: argparse.Namespace) -> int:
    import sys

    from slurm_supernode.api.logs import LogSelection, open_logs

    job_dir = job_dir_of(ns)
    streams = ("stdout", "stderr") if ns.stream == "both" else (ns.stream,)
    selection = LogSelection(ns.attempt, ns.node, tuple(ns.rank or ()), streams, ns.tail)
    lines = open_logs(job_dir, selection, follow=ns.follow)
    if lines is None:
        print(f"snrun: no rank logs yet in {job_dir}", file=sys.stderr)
        return 0
    for line in lines:
        print(line, flush=ns.follow)
    return 0
