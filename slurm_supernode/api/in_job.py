"""The entry points that run inside the allocation (``snrun supervise``, ``snrun agent``):
the runtime's supervisor and per-node agent, reached through this layer like every other verb.
Each imports only its own side (an agent never loads the supervisor)."""

from __future__ import annotations

from pathlib import Path


def run_supervisor(job_dir: Path, program_argv: list[str]) -> int:
    """The batch step: attempts, restarts, requeues (runtime/supervisor.py); its exit code."""
    from slurm_supernode.runtime import supervisor

    return supervisor.run_supervisor(job_dir, program_argv)


def lost_supervisor(job_dir: Path, rc: int) -> int:
    """The batch script after the supervisor died with ``rc``: end the chain cleanly."""
    from slurm_supernode.runtime import supervise_lost

    return supervise_lost.lost_supervisor(job_dir, rc)


def run_agent(job_dir: Path, program_argv: list[str] | None = None) -> int:
    """One node's agent: rank map, environment, torchrun (runtime/agent.py); its exit code."""
    from slurm_supernode.runtime import agent

    return agent.run_agent(job_dir, program_argv=program_argv)
