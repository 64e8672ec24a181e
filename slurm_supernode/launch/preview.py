"""What ``snrun --dry-run`` shows besides the script: the sbatch command and the rank plan."""

from __future__ import annotations

import shlex
from typing import Any

from slurm_supernode.launch.inputs import rank_map_for_job
from slurm_supernode.launch.job import JobPlan


def plan_preview(plan: JobPlan) -> dict[str, Any]:
    """The request, the sbatch command and the rank map of an example allocation."""
    hosts = plan.example_hosts
    rank_map = plan.example_rank_map or rank_map_for_job(plan.inputs, plan.site, hosts)
    command = shlex.join(["sbatch", *plan.request.sbatch_args(), str(plan.job_dir / "job.sh")])
    lines = [
        f"world size {rank_map.world_size}: {len(rank_map.nodes)} nodes x "
        f"{rank_map.nproc_per_node} processes; layout "
        + " ".join(f"{k}={v}" for k, v in rank_map.layout.as_dict().items()),
    ]
    for node in rank_map.nodes:
        first = node.node_rank * rank_map.nproc_per_node
        last = first + rank_map.nproc_per_node - 1
        devs = ",".join(map(str, node.visible_devices))
        lines.append(
            f"node {node.node_rank:>4}  {node.hostname:<16} {node.supernode:<10} "
            f"ranks {first}-{last}  devices {devs}"
        )
    for check in rank_map.checks:
        lines.append(f"check {'ok ' if check.ok else 'FAIL'} {check.name}: {check.detail}")
    return {
        "request": plan.request.as_dict(),
        "sbatch_command": command,
        "job_dir": str(plan.job_dir),
        "env": plan.env,
        "example_allocation": hosts,
        "plan_lines": lines,
        "world_size": rank_map.world_size,
        "nodes": [
            {
                "hostname": n.hostname,
                "node_rank": n.node_rank,
                "supernode": n.supernode,
                "visible_devices": list(n.visible_devices),
            }
            for n in rank_map.nodes
        ],
    }
