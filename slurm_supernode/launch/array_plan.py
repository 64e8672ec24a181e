"""plan -> render for a sweep: one Slurm job array whose every task is an snrun job chain.
Pure (no Slurm call, no file written); launch/array_submit.py writes and submits it.

Layout: ``<jobs_dir>/<name>-<stamp>/`` holds ``sweep.json`` (the grid, the tasks, the array's
job id once submitted), ``job.sh`` (the one array script), ``code/`` (the one code snapshot)
and ``tasks/<i>/``: task i's own job directory (plan.json, ledger, logs), so restarts,
requeues, resubmissions, ``snrun status/logs/attach`` work on a task as on any job.

The array script finds its task's directory from ``SLURM_ARRAY_TASK_ID``; each task's
``plan.json`` holds its own program arguments (``{name}`` replaced by the task's values) and
its parameters, which the supervisor hands to the program as ``SNRUN_PARAM_<NAME>``.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurm_supernode.errors import InputError
from slurm_supernode.launch.envmerge import merge_env
from slurm_supernode.launch.job import JobPlan, plan_job, template_context
from slurm_supernode.launch.jobdir import job_dir_name
from slurm_supernode.launch.jobspec import JobSpec
from slurm_supernode.launch.param_grid import Grid
from slurm_supernode.launch.render import Raw, render_sbatch
from slurm_supernode.launch.request import ClusterFacts, plan_request
from slurm_supernode.site.model import Site

SWEEP_FILE = "sweep.json"
TASKS = "tasks"
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class SweepTask:
    index: int
    params: dict[str, str]
    plan: JobPlan  # the task's own job (its job_dir is tasks/<index>)


@dataclass(frozen=True)
class SweepPlan:
    """Everything decided before the array is submitted."""

    spec: JobSpec
    grid: Grid
    sweep_dir: Path
    tasks: tuple[SweepTask, ...]
    script: str  # the array's batch script (every task runs it)
    array_args: tuple[str, ...]  # sbatch options of the array, --array included
    throttle: int | None = None  # %N: at most N tasks run at once

    @property
    def array(self) -> str:
        """sbatch's ``--array`` value: ``0-3``, ``0-3%2``."""
        spec = f"0-{len(self.tasks) - 1}"
        return spec + (f"%{self.throttle}" if self.throttle else "")

    def to_dict(self) -> dict[str, Any]:
        """``sweep.json`` (without the array's job id: known after sbatch)."""
        return {
            "schema": 1,
            "name": self.spec.name,
            "names": list(self.grid.names),
            "array": self.array,
            "throttle": self.throttle,
            "tasks": [
                {"task": t.index, "params": t.params, "job_dir": str(t.plan.job_dir)}
                for t in self.tasks
            ],
        }


def substitute(text: str, params: dict[str, str], task: int) -> str:
    """``{name}`` -> the task's value of ``name``, ``{task}`` -> its index; other braces stay
    (a JSON argument is left alone)."""

    def value(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in params:
            return params[name]
        return str(task) if name == "task" else m.group(0)

    return _PLACEHOLDER.sub(value, text)


def task_spec(spec: JobSpec, params: dict[str, str], index: int) -> JobSpec:
    """The task's spec: its program arguments with its values in place."""
    args = tuple(substitute(a, params, index) for a in spec.program_args)
    return dataclasses.replace(spec, program_args=args)


def plan_sweep(
    spec: JobSpec,
    grid: Grid,
    site: Site,
    facts: ClusterFacts | None = None,
    *,
    jobs_root: Path,
    throttle: int | None = None,
    stamp: float | None = None,
    token: str | None = None,
) -> SweepPlan:
    """Plan every task (each a whole-super-node job of its own) and the array script."""
    _check_sweep_spec(spec, grid, throttle)
    sweep_dir = (jobs_root / job_dir_name(spec.name, stamp, token)).absolute()
    tasks_dir = sweep_dir / TASKS
    tasks = []
    for i in range(len(grid)):
        params = grid.params(i)
        plan = plan_job(task_spec(spec, params, i), site, facts, job_dir=tasks_dir / str(i))
        inputs = dataclasses.replace(
            plan.inputs,
            sweep={"dir": str(sweep_dir), "task": i, "params": params},
        )
        tasks.append(SweepTask(i, params, dataclasses.replace(plan, inputs=inputs)))
    first = tasks[0].plan
    if first.request.heterogeneous:
        raise InputError(
            f"each task asks for {first.request.supernodes} super nodes, which strategy "
            f"'{first.request.strategy}' makes a heterogeneous job: Slurm cannot put those in "
            "a job array",
            where="-S/--supernodes",
            hint="sweep over -S 1 tasks, or use a block topology (strategy 'block')",
        )
    logs = tasks_dir / "%a" / "logs" / "slurm-%j.out"
    request = plan_request(spec, site, facts, output=str(logs))
    draft = SweepPlan(spec, grid, sweep_dir, tuple(tasks), "", (), throttle)
    args = (*request.sbatch_args(), f"--array={draft.array}")
    # the script's header shows the sbatch command as sbatch gets it (tasks/%a, not task 0's)
    script = _array_script(first, tasks_dir, site, args)
    tasks = [
        SweepTask(t.index, t.params, dataclasses.replace(t.plan, script=script)) for t in tasks
    ]
    return dataclasses.replace(draft, tasks=tuple(tasks), script=script, array_args=args)


def _check_sweep_spec(spec: JobSpec, grid: Grid, throttle: int | None) -> None:
    if throttle is not None and throttle < 1:
        raise InputError(f"must be >= 1, got {throttle}", where="--throttle")
    for key, value in spec.env:
        used = [n for n in _PLACEHOLDER.findall(value) if n in grid.names or n == "task"]
        if used:
            raise InputError(
                f"{key}={value!r}: --env values are the same for every task",
                where="--env",
                hint=f"the program gets SNRUN_PARAM_{used[0].upper()}; "
                f"or pass {{{used[0]}}} in the program's arguments",
            )
    if any(a == "--array" or a.startswith(("--array=", "-a")) for a in spec.sbatch_args):
        raise InputError(
            "a sweep makes the job array itself",
            where="--sbatch=--array",
            hint="drop it; --throttle N limits how many tasks run at once",
        )
    if spec.pinned_nodes:
        raise InputError("a sweep's tasks cannot share one exact node list", where="--nodelist")


def _array_script(first: JobPlan, tasks_dir: Path, site: Site, array_args: tuple[str, ...]) -> str:
    """The batch script every task runs: its job directory is ``tasks/$SLURM_ARRAY_TASK_ID``
    (a resubmitted task is a one-task array, ``--array=<i>``, so the same holds); the program
    and its arguments come from that directory's plan.json."""
    task_dir = shlex.quote(str(tasks_dir)) + '/"${SLURM_ARRAY_TASK_ID:?not a job array task}"'
    site_env, user_env = merge_env(site, first.spec.env, first.spec.profiles)
    context = template_context(first.inputs, first.job_dir, site_env, user_env)
    context |= {
        "job_dir": Raw(task_dir),
        "site_file": Raw(task_dir + "/site.yaml"),
        "program_argv": [],
        "sbatch_args": list(array_args),
    }
    return render_sbatch(context, first.spec.template, first.spec.blocks)
