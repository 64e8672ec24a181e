"""Ask a running job for a profiler window now (``snrun profile JOB``): a request file in the
current attempt's observe folder, written atomically, that every rank's step hook looks for
every few seconds (``runtime/comm_window``). Every rank profiles the same ``steps`` optimizer
steps once per request, from a step far enough ahead that each has seen the request by then
(``observe/window_start``, from the ranks' newest step records), and writes a ``CommShare``
record (``snrun metrics`` shows it); its trace goes to ``observe/<attempt>/traces/`` for
Perfetto/TensorBoard.

    from slurm_supernode.api.profile_request import request_profile
    req = request_profile(12345, steps=5)
    req.traces_dir
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from slurm_supernode.errors import InputError
from slurm_supernode.observe.records import attempt_dir

DEFAULT_STEPS = 3  # as the site's observe.profile_steps default
MAX_STEPS = 1000  # a window holds every op of every step in memory


@dataclass(frozen=True)
class ProfileRequest:
    """A request written: where, for which attempt, how many steps, where the traces land."""

    job_dir: Path
    attempt: int
    steps: int
    path: Path  # the request file the ranks look for
    traces_dir: Path  # rank-<r>.w<k>.pt.trace.json, one per rank and window
    after_step: int | None  # every rank profiles the steps after it; None: each its next


def _check_steps(steps: object) -> int:
    if steps is None:
        return DEFAULT_STEPS
    if isinstance(steps, bool) or not isinstance(steps, int):
        raise InputError(f"steps must be an int, got {type(steps).__name__}", where="steps")
    if not 1 <= steps <= MAX_STEPS:
        raise InputError(f"steps must be 1..{MAX_STEPS}, got {steps}", where="steps")
    return steps


def request_profile(
    job: int | str | os.PathLike[str],
    *,
    steps: int | None = None,
    jobs_dir: str | os.PathLike[str] | None = None,
    site: str | None = None,
) -> ProfileRequest:
    """Ask every rank of the job's running attempt to profile its next ``steps`` steps (default
    3). Refused (InputError on ``job``) where the job is not running: nobody would read it."""
    from slurm_supernode.api.metrics import job_context, job_dir_of
    from slurm_supernode.runtime.comm_window import request_window

    steps = _check_steps(steps)
    job_dir = job_dir_of(job, jobs_dir=jobs_dir, site=site)
    ctx = job_context(job_dir, None)
    if ctx.state != "RUNNING":
        raise InputError(
            f"job {job_dir.name} is not running (attempt {ctx.attempt}: {ctx.state}): "
            "no rank would take the request",
            where="job",
        )
    after_step = _aligned_start(job_dir, ctx.attempt)
    path = request_window(job_dir, ctx.attempt, steps, after_step)
    return ProfileRequest(
        job_dir=job_dir,
        attempt=ctx.attempt,
        steps=steps,
        path=path,
        traces_dir=attempt_dir(job_dir, ctx.attempt) / "traces",
        after_step=after_step,
    )


TAIL_BYTES = 4096  # a rank's last few step records


def _aligned_start(job_dir: Path, attempt: int) -> int | None:
    import time

    from slurm_supernode.observe.records import StepRecord, read_tail
    from slurm_supernode.observe.step_recorder import FLUSH_SECONDS
    from slurm_supernode.observe.window_start import window_start
    from slurm_supernode.runtime.comm_window import LOOK_EVERY

    newest = [
        r
        for path in sorted(attempt_dir(job_dir, attempt).glob("rank-*.steps.jsonl"))
        for r in read_tail(path, TAIL_BYTES)
        if isinstance(r, StepRecord)
    ]
    return window_start(newest, time.time(), look_every=LOOK_EVERY, flush_s=FLUSH_SECONDS)
