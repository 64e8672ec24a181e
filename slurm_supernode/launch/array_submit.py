"""Write a planned sweep (launch/array_plan.py) to disk and submit its one job array."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from slurm_supernode.errors import SlurmError
from slurm_supernode.fsutil import write_atomic, write_json_atomic
from slurm_supernode.launch.array_plan import SWEEP_FILE, SweepPlan
from slurm_supernode.launch.job import write_job_dir
from slurm_supernode.launch.jobdir import link_job_id
from slurm_supernode.launch.snapshot import collect_snapshot, limit_bytes, write_snapshot


def write_sweep(plan: SweepPlan) -> None:
    """The sweep directory: one code snapshot (each task's ``code`` links to it), the array
    script, ``sweep.json`` and one job directory per task."""
    first = plan.tasks[0].plan
    shared = None
    if first.snapshot is not None:  # checked before anything is written
        shared = first.snapshot._replace(dest=plan.sweep_dir / "code")
        code = collect_snapshot(shared, limit_bytes(), skip=[plan.sweep_dir.parent])
    plan.sweep_dir.mkdir(parents=True, exist_ok=True)
    if shared is not None:
        write_snapshot(shared, *code)
    write_atomic(plan.sweep_dir / "job.sh", plan.script, mode=0o755)
    write_json_atomic(plan.sweep_dir / SWEEP_FILE, plan.to_dict())
    for task in plan.tasks:
        write_job_dir(dataclasses.replace(task.plan, snapshot=None))
        if shared is not None:
            link = task.plan.job_dir / "code"
            link.symlink_to(os.path.relpath(shared.dest, task.plan.job_dir))


def submit_sweep(plan: SweepPlan, extra_args: Sequence[str] = (), *, attempts: int = 3) -> int:
    """Write the sweep and submit the array; returns the array's job id. ``by-id`` links:
    ``<array id>`` -> the sweep, ``<array id>_<i>`` -> task i (its own job id is linked by its
    supervisor when it starts)."""
    from slurm_supernode.slurm import jobs

    write_sweep(plan)
    workdir = plan.tasks[0].plan.inputs.workdir
    args = [*plan.array_args, *extra_args]  # last --dependency wins: --after's
    for i in range(attempts):
        try:
            array_id = jobs.submit(plan.script, args, cwd=workdir)
            break
        except SlurmError as exc:
            if not exc.kind.transient or i + 1 == attempts:
                raise
            time.sleep(1.0 + i)
    root = plan.sweep_dir.parent
    data = plan.to_dict() | {"array_job_id": array_id, "submitted": time.time()}
    write_json_atomic(plan.sweep_dir / SWEEP_FILE, data)
    link_job_id(root, plan.sweep_dir, array_id)
    for task in plan.tasks:
        name = f"{array_id}_{task.index}"
        write_json_atomic(task.plan.job_dir / "job.json", {"job_ids": [], "array": name})
        link_job_id(root, task.plan.job_dir, name)
    return array_id


def read_sweep(sweep_dir: Path) -> dict[str, object]:
    return dict(json.loads((sweep_dir / SWEEP_FILE).read_text()))
