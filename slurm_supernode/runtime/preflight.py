"""The pre-flight health check of an attempt: `snrun health` on every node in one srun step."""

from __future__ import annotations

import contextlib
import json

from slurm_supernode.errors import SlurmError
from slurm_supernode.runtime.classify import NodeHealth
from slurm_supernode.runtime.supervisor_config import SupervisorConfig
from slurm_supernode.slurm.steps import run_step, step_command


def preflight(cfg: SupervisorConfig, attempt: int) -> list[str]:
    """`snrun health` on every node (one srun step); nodes that are critical or silent."""
    out_dir = cfg.job_dir / "health"
    out_dir.mkdir(parents=True, exist_ok=True)
    # %t (task id), not %N: with several slurmd per host %N is the host's name, not the node's.
    pattern = str(out_dir / f"attempt{attempt}.task%t.json")
    check = [cfg.python, "-m", "slurm_supernode", "health", "--site", cfg.site_file, "--json"]
    with contextlib.suppress(SlurmError):  # nodes that gave no answer count as failed below
        run_step(step_command(len(cfg.hosts), cfg.het_size, check, output=pattern))
    status: dict[str, NodeHealth] = {}
    for path in out_dir.glob(f"attempt{attempt}.task*.json"):
        try:
            result = json.loads(path.read_text())
            status[str(result.get("node"))] = NodeHealth(int(result.get("status")))
        except (OSError, ValueError, TypeError):
            continue
    return [h for h in cfg.hosts if status.get(h, NodeHealth.CRITICAL) is NodeHealth.CRITICAL]
