"""Entry of ``snrun supervise --lost RC``: the batch script's last word after its supervisor
died (``chain.lost`` records the chain's end).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from slurm_supernode.jobenv import JobEnvironment
from slurm_supernode.launch.inputs import load_inputs
from slurm_supernode.runtime.sbatch_argv import expedited


def lost_supervisor(job_dir: Path, rc: int, environ: Mapping[str, str] | None = None) -> int:
    """Entry of ``snrun supervise --lost RC`` (the batch script, after the supervisor died):
    returns the exit code the batch script should end with (the supervisor's own)."""
    import sys

    from slurm_supernode.chain.lost import record_lost_supervisor

    env = JobEnvironment.from_environ(dict(os.environ if environ is None else environ))
    inputs = load_inputs(job_dir)
    reason = record_lost_supervisor(
        job_dir, rc, env.job_id or 0, expedited(inputs.request["sbatch_args"])
    )
    if reason:
        print(f"snrun: error: {reason}", file=sys.stderr)
    return rc
