"""The per-node agent's command line, built in one place for the three that start agents: the
supervisor's srun step (runtime/agent_step.py), the bench and doctor batch script
(templates/bench.sh.j2, as ``agent_argv``) and the doctor's step inside a running job
(doctor/job.py). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def agent_argv(python: str, job_dir: Path | str, program_argv: Sequence[str]) -> list[str]:
    """``PYTHON -m slurm_supernode agent --job-dir DIR -- PROGRAM ARGS``: the agent reads the
    rest of the job from ``DIR``; the program's argv follows ``--`` verbatim."""
    cmd = [python, "-m", "slurm_supernode", "agent", "--job-dir", str(job_dir)]
    return [*cmd, "--", *program_argv] if program_argv else cmd
