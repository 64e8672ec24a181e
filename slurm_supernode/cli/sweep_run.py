"""A sweep from the command line (``snrun --sweep ...`` or ``snrun sweep``): plan it through
the API, print the dry run, or submit it and say its array job id."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from slurm_supernode.launch.array_plan import SweepPlan
from slurm_supernode.launch.jobspec import JobSpec
from slurm_supernode.launch.param_grid import Grid


def run_sweep(ns: argparse.Namespace, spec: JobSpec, grid: Grid) -> int:
    from slurm_supernode.api.sweep import plan, submit_sweep

    swept = plan(spec, grid, throttle=ns.throttle, need_slurm=not ns.dry_run)
    for notice in swept.tasks[0].plan.request.notices:
        print(f"snrun: {notice}", file=sys.stderr)
    if ns.dry_run:
        print_dry_run(swept, as_json=ns.json)
        return 0
    sweep = submit_sweep(swept, after=ns.after)
    n = len(swept.tasks)
    if ns.parsable:
        print(sweep.array_job_id, flush=True)
    else:
        print(
            f"Submitted batch job {sweep.array_job_id} (a sweep of {n} tasks, "
            f"--array={swept.array}; 'snrun status {sweep.array_job_id}' shows them)",
            flush=True,
        )
    if not ns.wait:
        return 0
    summary = sweep.wait()
    counts = ", ".join(f"{n} {state}" for state, n in sorted(summary["counts"].items()))
    print(f"snrun: sweep {summary['state']}: {counts}", file=sys.stderr)
    return 0 if summary["state"] == "COMPLETED" else 1


def dry_run_preview(swept: SweepPlan) -> dict[str, Any]:
    return {
        "sweep_dir": str(swept.sweep_dir),
        "array": swept.array,
        "sbatch_args": list(swept.array_args),
        "sbatch_command": "sbatch " + " ".join(shlex.quote(a) for a in swept.array_args),
        "script": swept.script,
        "tasks": [
            {
                "task": t.index,
                "params": t.params,
                "program_argv": list(t.plan.inputs.program_argv),
                "job_dir": str(t.plan.job_dir),
            }
            for t in swept.tasks
        ],
    }


def print_dry_run(swept: SweepPlan, *, as_json: bool) -> None:
    preview = dry_run_preview(swept)
    if as_json:
        print(json.dumps(preview, indent=2))
        return
    print(swept.script, end="")
    print("\n# --- sbatch command (dry run: nothing submitted) ---")
    print("# " + preview["sbatch_command"])
    print(f"# --- {len(swept.tasks)} tasks (each its own job chain under tasks/<task>) ---")
    for t in preview["tasks"]:
        params = " ".join(f"{k}={v}" for k, v in t["params"].items())
        print(f"# {t['task']:>4}  {params}  {shlex.join(t['program_argv'])}")
