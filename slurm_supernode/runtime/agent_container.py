"""The agent's torchrun put into the job's container: this node's files written (enter script,
OCI bundle), and what the agent runs instead of torchrun (``runtime.container_launch``
plans it).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from slurm_supernode.jobenv import JobEnvironment
from slurm_supernode.launch.container import ContainerSpec
from slurm_supernode.launch.container_render import ContainerLaunch
from slurm_supernode.launch.inputs import JobInputs
from slurm_supernode.runtime.agent_plan import RANK_ENTRY, AgentLaunch


def container_launch(
    spec: ContainerSpec,
    launch: AgentLaunch,
    inputs: JobInputs,
    job_dir: Path,
    environ: Mapping[str, str],
    hostname: str,
) -> ContainerLaunch:
    """Write this node's container files (enter script, OCI bundle) and return what to run:
    torchrun inside the job's container, the agent on the host."""
    from slurm_supernode.forensics.env import ERROR_HOOK_DIR
    from slurm_supernode.runtime.container_launch import (
        plan_container_launch,
        read_image_config,
        write_launch_files,
    )

    try:
        names = list(json.loads((job_dir / "env.json").read_text()))
    except (OSError, ValueError):
        names = []
    job_env = JobEnvironment.from_environ(environ)
    plan = plan_container_launch(
        spec,
        launch.argv,
        launch.env,
        base_env=environ,
        names=names,
        job_dir=job_dir,
        hostname=hostname,
        attempt=job_env.attempt,
        job_id=job_env.job_id or 0,
        vendor=inputs.vendor,
        # snrun's own files the ranks run inside: the error hook and (forked workers) the
        # rank entry, read-only at the same path
        extra_mounts=[f"{d}:{d}:ro" for d in (ERROR_HOOK_DIR, os.path.dirname(RANK_ENTRY))],
        image_config=read_image_config(spec),
        home=environ.get("HOME"),
    )
    write_launch_files(plan)
    print(
        f"snrun: {hostname}: torchrun in {spec.runtime} container {spec.image}",
        file=sys.stderr,
        flush=True,
    )
    return plan
