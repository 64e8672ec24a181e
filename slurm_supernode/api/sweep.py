"""Sweeps from Python: ``submit_sweep(spec, grid)`` submits one Slurm job array whose every
task is an snrun job chain on whole super nodes (launch/array_plan.py); ``Sweep`` is its handle.

    from slurm_supernode.api.sweep import grid, submit_sweep
    sweep = submit_sweep(spec, grid(lr=["1e-4", "3e-4"], seed=range(4)), throttle=2)
    sweep.wait(timeout=3600)["state"]; print(sweep.table())
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slurm_supernode.api.wording import in_api_words
from slurm_supernode.launch.after import After
from slurm_supernode.launch.array_plan import SweepPlan, plan_sweep
from slurm_supernode.launch.jobspec import JobSpec
from slurm_supernode.launch.param_grid import Grid, product
from slurm_supernode.launch.request import ClusterFacts
from slurm_supernode.site.model import Site

if TYPE_CHECKING:
    from slurm_supernode.api.cancel import CancelOutcome
    from slurm_supernode.api.job import NeverStarts
    from slurm_supernode.api.watcher import Watcher
    from slurm_supernode.chain.status import JobRecord


@in_api_words
def grid(**dims: Iterable[object]) -> Grid:
    """Every combination of the given values, the first name varying slowest:
    ``grid(lr=["1e-4", "3e-4"], seed=range(4))`` is 8 tasks. Values are passed as text
    (str, int or float; a string alone is one value only inside a list)."""
    from slurm_supernode.api.arguments import grid_values
    from slurm_supernode.errors import InputError

    if not dims:
        raise InputError("grid() has no parameters", where="grid", hint="grid(lr=[...], ...)")
    return product([(name, grid_values(name, values)) for name, values in dims.items()], "grid")


@dataclass(frozen=True)
class Sweep:
    """A submitted sweep: its directory and the array's job id. Its tasks' records come from
    ``watcher`` (default: the process's shared one): one Slurm query per poll for the whole
    sweep, however many tasks, and for every other job the process watches."""

    sweep_dir: Path
    array_job_id: int
    watcher: Watcher | None = field(default=None, compare=False, repr=False)

    def _watcher(self) -> Watcher:
        from slurm_supernode.api.watcher import shared_watcher

        return self.watcher or shared_watcher()

    def _record(self) -> JobRecord:
        """The watcher's records, with every task's newest job id watched first (so that the
        next poll asks for them all at once)."""
        from slurm_supernode.chain import ledger
        from slurm_supernode.chain.array_status import task_dirs

        watcher = self._watcher()
        ids = [ledger.current_job_id(d) for d in task_dirs(self.sweep_dir)]
        if None in ids and self.array_job_id > 0:  # a task not started: it waits in the
            ids.append(self.array_job_id)  # array's own pending record (its reason)
        watcher.watch(i for i in ids if i is not None)
        return watcher.record

    def status(self) -> dict[str, Any]:
        """Every task's state, attempts and causes (``snrun status <sweep> --json``)."""
        from slurm_supernode.chain.array_status import sweep_summary

        return sweep_summary(self.sweep_dir, self._record())

    def table(self) -> str:
        from slurm_supernode.chain.array_status import format_sweep

        return format_sweep(self.status())

    def wait(
        self,
        timeout: float | None = None,
        progress: Callable[[dict[str, Any]], object] | None = None,
        *,
        sleep: Callable[[float], object] = time.sleep,
    ) -> dict[str, Any]:
        """Until every task's chain has ended; the status then. The ledgers (local files) are
        read every second, Slurm on the watcher's schedule (2 s growing to 60 s while nothing
        changes). ``progress`` is called with each new set of task states. ``NeverStarts``
        as soon as a task waits for what can never come (``status()["never_starts"]``: a
        dependency never satisfied, a partition that cannot serve it): the sweep could never
        end; ``JobError`` after ``timeout`` seconds."""
        from slurm_supernode.api.arguments import check_callable, check_seconds
        from slurm_supernode.api.watcher import LEDGER_POLL
        from slurm_supernode.chain.array_status import all_ended
        from slurm_supernode.errors import JobError

        timeout = check_seconds(timeout, "timeout")
        check_callable(progress, "progress")
        deadline = None if timeout is None else time.monotonic() + timeout
        last: dict[str, int] | None = None
        while True:
            summary = self.status()
            if progress is not None and summary["counts"] != last:
                progress(summary)
            last = summary["counts"]
            if all_ended(summary):
                return summary
            if summary["never_starts"]:
                raise self._never_starts(summary)
            if deadline is not None and time.monotonic() >= deadline:
                raise JobError(
                    f"sweep did not end within {timeout:g} s ({summary['counts']})",
                    where=str(self.sweep_dir),
                )
            pause = min(LEDGER_POLL, max(0.05, self._watcher().until_next_poll()))
            if deadline is not None:
                pause = min(pause, max(0.0, deadline - time.monotonic()))
            sleep(pause)

    def cancel(self) -> CancelOutcome:
        """End every task's chain that has not ended, then the array (``Job.cancel``'s
        outcome): ``.job_ids`` cancelled. Ended is ended: a task that ended stays as it ended;
        with every task ended nothing is changed and ``.ended`` is the sweep's end
        (COMPLETED, FAILED or CANCELLED; ``.reason`` its tasks' counts)."""
        from slurm_supernode.api.cancel import CancelOutcome
        from slurm_supernode.chain.array_status import cancel_sweep, ended_as

        ids = cancel_sweep(self.sweep_dir)
        ended = None if ids else ended_as(self.sweep_dir)
        return CancelOutcome((), *ended) if ended else CancelOutcome(tuple(ids))

    def _never_starts(self, summary: dict[str, Any]) -> NeverStarts:
        from slurm_supernode.api.chain_state import ChainState
        from slurm_supernode.api.job import NeverStarts
        from slurm_supernode.chain.array_status import task_ranges

        tasks = task_ranges(summary["never_start_tasks"])
        row = next(r for r in summary["tasks"] if r["task"] == summary["never_start_tasks"][0])
        ids = row["job_ids"]
        state = ChainState(
            "PENDING", False, row["reason"], ids[-1] if ids else self.array_job_id, "PENDING",
            row["attempts"], "queue", never_starts=True,
        )  # fmt: skip
        return NeverStarts(
            f"sweep {self.array_job_id}: task {tasks} can never start: {summary['reason']}",
            where=str(self.sweep_dir),
            state=state,
            hint=f"snrun cancel {self.array_job_id}",
            summary=summary,
        )

    def task_dir(self, task: int) -> Path:
        return self.sweep_dir / "tasks" / str(task)

    @classmethod
    @in_api_words
    def from_id(cls, job: int | str | Path, jobs_dir: str | Path | None = None) -> Sweep:
        """The sweep of an array job id (or its directory)."""
        import json

        from slurm_supernode.api.arguments import check_job_ref, check_path_like
        from slurm_supernode.errors import InputError
        from slurm_supernode.launch.array_plan import SWEEP_FILE
        from slurm_supernode.launch.jobdir import find_job_dir, jobs_root

        check_job_ref(job)
        check_path_like(jobs_dir, "jobs_dir")
        path = find_job_dir(jobs_root(str(jobs_dir) if jobs_dir else None), str(job))
        if not (path / SWEEP_FILE).is_file():
            raise InputError(f"{job} is a job, not a sweep", where="JOB")
        return cls(path, int(json.loads((path / SWEEP_FILE).read_text())["array_job_id"]))


@in_api_words
def plan(
    spec: JobSpec,
    tasks: Grid,
    *,
    throttle: int | None = None,
    need_slurm: bool = False,
    site: Site | None = None,
    facts: ClusterFacts | None = None,
) -> SweepPlan:
    """The dry run of a sweep: the script's #SBATCH lines applied, every task's plan and the
    array script; nothing written. ``need_slurm``: Slurm's facts are required (a submission)
    and a script the job could not find is refused. ``spec.jobs_dir``: where it goes."""
    from slurm_supernode.api.arguments import check_grid_call
    from slurm_supernode.api.planning import program_refusal, with_directives
    from slurm_supernode.launch.facts import gather_facts
    from slurm_supernode.launch.jobdir import jobs_root
    from slurm_supernode.launch.syntax import check_job_values
    from slurm_supernode.site.loader import load_site

    spec = check_grid_call(spec, tasks, throttle)
    applied, _ = with_directives(spec)
    check_job_values(applied)
    refusal = program_refusal(applied)
    if refusal is not None and need_slurm:
        raise refusal
    site = site or load_site(applied.site)
    if facts is None:
        facts = gather_facts(site, required=need_slurm)
    root = jobs_root(applied.jobs_dir, site_jobs_dir=site.paths.jobs_dir)
    return plan_sweep(applied, tasks, site, facts, jobs_root=root, throttle=throttle)


@in_api_words
def submit_sweep(
    spec: JobSpec | SweepPlan,
    tasks: Grid | None = None,
    *,
    throttle: int | None = None,
    after: After | str | None = None,
) -> Sweep:
    """Submit the sweep (a spec and its grid, or a plan from ``plan(..., need_slurm=True)``)
    as one job array; ``after``: start only when that job's chain has ended so
    (``"1234:ok"``). ``spec.jobs_dir``: where the sweep's directory goes."""
    from slurm_supernode.api.arguments import check_after
    from slurm_supernode.chain.dependents import after_args, finish_after, prepare_after
    from slurm_supernode.errors import InputError
    from slurm_supernode.launch.array_submit import submit_sweep as submit_array

    after = check_after(after)  # type: ignore[assignment]
    if isinstance(spec, SweepPlan):
        swept = spec
    else:
        if tasks is None:
            raise InputError("submit_sweep(spec, grid): no grid given", where="grid")
        swept = plan(spec, tasks, throttle=throttle, need_slurm=True)
    prepared = None
    if after is not None:
        prepared = prepare_after(after, swept.sweep_dir.parent, swept.spec.dependency)
    array_id = submit_array(swept, after_args(prepared))
    if prepared is not None:
        finish_after(prepared, swept.spec.sbatch_args, array_id, swept.sweep_dir)
    return Sweep(swept.sweep_dir, array_id)


def sweep_of(path: Path) -> Sweep | None:
    """The sweep whose directory ``path`` is; None for a job chain's directory."""
    import json

    from slurm_supernode.launch.array_plan import SWEEP_FILE

    if not (path / SWEEP_FILE).is_file():
        return None
    return Sweep(path, int(json.loads((path / SWEEP_FILE).read_text()).get("array_job_id") or 0))


def recent_sweeps(jobs_root: Path, last: int) -> list[dict[str, Any]]:
    """The user's ``last`` most recent sweeps under ``jobs_root``, a row each (``snrun
    status``)."""
    from slurm_supernode.chain.array_status import recent_sweeps as rows
    from slurm_supernode.launch.jobdir import own_job_dirs

    return rows(own_job_dirs(jobs_root, "sweep.json")[:last])
