"""The srun step of an attempt: one agent per node across the whole allocation."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from slurm_supernode.launch.agent_argv import agent_argv
from slurm_supernode.slurm.steps import step_command


def srun_command(
    python: str, job_dir: Path, hosts: Sequence[str], het_size: int, program_argv: list[str]
) -> list[str]:
    """One agent per node across the whole allocation (every component of a het job)."""
    return step_command(len(hosts), het_size, agent_argv(python, job_dir, program_argv))
