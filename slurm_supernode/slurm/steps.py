"""Job steps started from outside a batch script (``srun --jobid``)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence

from slurm_supernode.slurm.runner import run_slurm


def overlap_step(
    job_id: int,
    nodelist: str,
    nodes: int,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 1800,
    cwd: str | os.PathLike[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """One task per node of ``nodelist`` inside running job ``job_id``, sharing its resources
    with the job's own steps (``--overlap``: the job keeps running). Not checked: the caller
    reads the exit code."""
    cmd = [
        "srun",
        f"--jobid={job_id}",
        "--overlap",
        f"--nodelist={nodelist}",
        f"--nodes={nodes}",
        f"--ntasks={nodes}",
        "--ntasks-per-node=1",
        "--kill-on-bad-exit=1",
        "--export=ALL",
        *argv,
    ]
    return run_slurm(cmd, timeout=timeout, check=False, env=env, cwd=cwd)
