"""`snrun supervise --job-dir DIR -- SCRIPT ARGS`: the batch step of an snrun job."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Batch-step supervisor: runs the agents, records attempts, restarts."
    p.add_argument("--job-dir", required=True, type=Path)
    p.add_argument(
        "--lost",
        type=int,
        metavar="RC",
        help="(batch script) the supervisor died with exit code RC: end the chain cleanly",
    )
    p.add_argument("program_argv", nargs=argparse.REMAINDER, help="-- SCRIPT ARGS")


def run(ns: argparse.Namespace) -> int:
    from slurm_supernode.api.in_job import lost_supervisor, run_supervisor

    if ns.lost is not None:
        return lost_supervisor(ns.job_dir, ns.lost)

    argv = ns.program_argv[1:] if ns.program_argv[:1] == ["--"] else ns.program_argv
    return run_supervisor(ns.job_dir, argv)
