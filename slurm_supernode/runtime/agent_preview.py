"""What each node runs, for ``snrun --dry-run``: the agent's plan on the example allocation
(attempt 0), through the job's container when it has one. Pure: nothing is written."""

from __future__ import annotations

import shlex
from typing import Any

from slurm_supernode.forensics.logs import node_log_dir
from slurm_supernode.launch.inputs import rank_map_for_job
from slurm_supernode.launch.job import JobPlan
from slurm_supernode.runtime.agent_plan import plan_agent_launch
from slurm_supernode.runtime.container_launch import plan_container_launch, read_image_config

JOB_ID = 0  # unknown before sbatch: shown as $SLURM_JOB_ID


def node_commands(plan: JobPlan) -> list[dict[str, Any]]:
    """Per example node: the argv the agent runs, and the files it writes first."""
    inputs = plan.inputs
    hosts = plan.example_hosts
    rank_map = rank_map_for_job(inputs, plan.site, hosts)
    spec = inputs.container_spec()
    image_config = read_image_config(spec) if spec else None
    out = []
    for host in hosts:
        log_dir = str(node_log_dir(plan.job_dir, 0, host))
        launch = plan_agent_launch(
            inputs, plan.site, rank_map, host, plan.env, attempt=0, job_id=JOB_ID, log_dir=log_dir
        )
        if spec is None:
            out.append({"node": host, "argv": launch.argv, "files": {}, "mounts": []})
            continue
        c = plan_container_launch(
            spec,
            launch.argv,
            launch.env,
            base_env={},
            names=list(plan.env),
            job_dir=plan.job_dir,
            hostname=host,
            attempt=0,
            job_id=JOB_ID,
            vendor=inputs.vendor,
            image_config=image_config,
            exists=lambda _path: True,
        )
        argv = [("--jobid=$SLURM_JOB_ID" if a == f"--jobid={JOB_ID}" else a) for a in c.argv]
        out.append({"node": host, "argv": argv, "files": c.files, "mounts": list(c.mounts)})
    return out


def node_command_lines(commands: list[dict[str, Any]]) -> list[str]:
    """The text form: one command per node, then the enter script of the first node."""
    lines = [f"{c['node']}: {shlex.join(c['argv'])}" for c in commands]
    first = commands[0]["files"] if commands else {}
    for path, text in first.items():
        if path.endswith(".enter.sh"):
            lines.append(f"--- {path} (per node and attempt; first node shown) ---")
            lines += text.splitlines()
    return lines
