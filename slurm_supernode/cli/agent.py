"""`snrun agent --job-dir DIR`: the per-node agent (started by the supervisor's srun)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Per-node agent inside a job: rank map, device order, env, exec torchrun."
    p.add_argument("--job-dir", required=True, type=Path)
    p.add_argument("program_argv", nargs=argparse.REMAINDER, help="-- SCRIPT ARGS (optional)")


def run(ns: argparse.Namespace) -> int:
    from slurm_supernode.api.in_job import run_agent

    argv = ns.program_argv[1:] if ns.program_argv[:1] == ["--"] else ns.program_argv
    return run_agent(ns.job_dir, program_argv=argv or None)
