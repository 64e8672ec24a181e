"""Run a command inside a running job's allocation (``srun --jobid --overlap``).

The step overlaps the job's own steps (it takes no resources from them), so it works while
every CPU of the job is in use. Used by ``snrun attach`` and by the supervisor to collect stack
dumps before it stops a hung attempt.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from typing import Any

from slurm_supernode.errors import SlurmError
from slurm_supernode.hostlist import fold
from slurm_supernode.slurm.steps import overlap_argv


def attach_argv(
    job_id: int,
    nodes: Sequence[str],
    command: Sequence[str],
    *,
    pty: bool = False,
    label: bool = False,
) -> list[str]:
    """The srun command: one task on each of ``nodes`` (a pseudo-terminal for a shell;
    ``label``: each output line prefixed with its task number, ``0: ``)."""
    if not nodes:
        raise ValueError("attach needs at least one node")
    cmd = overlap_argv(job_id, fold(list(nodes)), len(nodes), kill_on_bad_exit=False)
    if pty:
        cmd.append("--pty")
    if label:
        cmd.append("--label")
    return [*cmd, *command]


def run_attached(argv: Sequence[str], *, timeout: float | None = None, **kw: Any) -> int:
    """Run the srun command with the caller's terminal (or the given ``stdout=``...); its exit
    code. A missing srun is a SlurmError like every other Slurm command."""
    try:
        done: subprocess.CompletedProcess[Any]
        done = subprocess.run(list(argv), check=False, timeout=timeout, **kw)
        return done.returncode
    except FileNotFoundError:
        raise SlurmError("srun not found: Slurm is not installed") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"srun --overlap did not finish within {timeout:g} s") from None


def attached_output(argv: Sequence[str]) -> tuple[int, str]:
    """Run the srun command, stderr to the caller's; (exit code, its stdout)."""
    try:
        proc = subprocess.run(list(argv), check=False, stdout=subprocess.PIPE, text=True)
    except FileNotFoundError:
        raise SlurmError("srun not found: Slurm is not installed") from None
    return proc.returncode, proc.stdout
