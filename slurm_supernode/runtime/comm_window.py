"""The communication share measured in the job: every rank runs torch's profiler for a few
optimizer steps once per attempt after warm-up (``SNRUN_PROFILE_AFTER``, default the site's
``observe.profile_after``; ``SNRUN_PROFILE_STEPS`` of them, 0: never), and again when asked
(``request_window``: a file the ranks look for every few seconds, naming the step after which
all of them open it). The trace is kept for
Perfetto/TensorBoard (``observe/<attempt>/traces/``), reduced (``observe/trace_reduce``) and
written as a ``CommShare`` record with the plan's share beside it (``runtime/plan_share``: once
per window, with the site's newest bench results read then) and what it was computed with.

Driven by the step hook (``runtime/step_hook``) inside the rank; torch's profiler is imported
only when a window opens. Every rank opens its window at the same step, so peers are slowed
alike and the slow-node judge is not misled. A failure is said once and never stops training.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from slurm_supernode.observe.records import CommShare, append, attempt_dir, comm_path
from slurm_supernode.observe.step_recorder import StepRecorder

AFTER_ENV = "SNRUN_PROFILE_AFTER"
STEPS_ENV = "SNRUN_PROFILE_STEPS"
REQUEST = "profile-request.json"
LOOK_EVERY = 5.0  # seconds between looks for a request


def request_window(job_dir: Path, attempt: int, steps: int, after_step: int | None) -> Path:
    """Ask every rank of ``attempt`` for a window of ``steps`` steps: those after
    ``after_step`` (a rank already past it, or None: from its next step)."""
    from slurm_supernode.fsutil import write_json_atomic

    path = attempt_dir(job_dir, attempt) / REQUEST
    write_json_atomic(path, {"steps": steps, "t": time.time(), "after_step": after_step})
    return path


class CommWindow:
    """One rank's profiler windows."""

    def __init__(
        self,
        job_dir: Path,
        attempt: int,
        rank: int,
        node: str,
        *,
        after: int,
        steps: int,
        environ: Mapping[str, str],
    ) -> None:
        self.job_dir, self.attempt, self.rank, self.node = job_dir, attempt, rank, node
        self.environ = dict(environ)
        self.steps = steps
        self._next = after if steps > 0 else None  # the step after which a window opens
        self._prof: Any = None
        self._opened_at = 0
        self._length = steps
        self._windows = 0
        self._looked = time.monotonic()
        self._handled = 0.0  # the request time already served

    def after_step(self, step: int) -> None:
        try:
            if self._prof is not None:
                if step - self._opened_at >= self._length:
                    self._close(step)
                return
            self._look_for_request(step)
            if self._next is not None and step >= self._next:
                self._next = None
                self._open(step)
        except Exception as exc:
            self._prof = None
            print(
                f"snrun: observe: rank {self.rank}: profiler window failed: "
                f"{type(exc).__name__}: {exc}",
                file=sys.stderr,
            )

    def _look_for_request(self, step: int) -> None:
        now = time.monotonic()
        if now - self._looked < LOOK_EVERY:
            return
        self._looked = now
        path = attempt_dir(self.job_dir, self.attempt) / REQUEST
        try:
            data = json.loads(path.read_text())
            asked, steps = float(data["t"]), int(data["steps"])
            after = int(data.get("after_step") or 0)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return
        if asked > self._handled and steps > 0:
            self._handled = asked
            self._length, self._next = steps, max(step, after)

    def _open(self, step: int) -> None:
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU]
        import torch

        if torch.cuda.is_available() and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
            activities.append(ProfilerActivity.CUDA)
        self._prof = profile(activities=activities)
        self._prof.__enter__()
        self._opened_at = step

    def _close(self, step: int) -> None:
        prof, self._prof = self._prof, None
        prof.__exit__(None, None, None)
        traces = attempt_dir(self.job_dir, self.attempt) / "traces"
        traces.mkdir(parents=True, exist_ok=True)
        trace = traces / f"rank-{self.rank}.w{self._windows}.pt.trace.json"
        self._windows += 1
        prof.export_chrome_trace(str(trace))
        self.write(trace, step - self._opened_at)

    def write(self, trace: Path, steps: int) -> CommShare:
        """Reduce ``trace`` (``steps`` steps) and append its record."""
        from slurm_supernode.observe.trace_reduce import reduce_trace

        data = json.loads(trace.read_text())
        parts = reduce_trace(data, group_kinds(data, self.environ))
        hosts = _hosts(self.environ)
        share, note = None, "no plan: the job's hosts are unknown ($SNRUN_NODELIST)"
        if hosts:
            from slurm_supernode.runtime.plan_share import plan_share

            share, note = plan_share(self.job_dir, hosts, self.environ, parts.compute_s / steps)
        record = CommShare(
            t=time.time(),
            rank=self.rank,
            node=self.node,
            steps=steps,
            compute_s=parts.compute_s,
            exposed_comm_s=parts.exposed_comm_s,
            overlapped_comm_s=parts.overlapped_comm_s,
            by_group=parts.by_group,
            plan_share=share,
            plan_note=note,
            trace=os.path.relpath(trace, self.job_dir),
        )
        append(comm_path(self.job_dir, self.attempt, self.rank), [record])
        return record


def group_kinds(trace: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """A process group's description -> its layout kind, where its ranks are exactly one of
    this rank's groups of the layout (``SNRUN_LAYOUT``); the default group is ``world``."""
    out = {"default_pg": "world"}
    try:
        from slurm_supernode.jobenv import JobEnvironment
        from slurm_supernode.placement.layout import groups
        from slurm_supernode.placement.model import GROUP_DIMS, Layout

        layout = Layout.from_dict(json.loads(environ.get("SNRUN_LAYOUT", "{}")))
        env = JobEnvironment.from_environ(environ)
        mine = {
            tuple(g): dim
            for dim in GROUP_DIMS
            for g in groups(layout, dim, env.world_size)
            if (env.rank or 0) in g
        }
    except Exception:
        return out
    for pg in (trace.get("distributedInfo") or {}).get("pg_config") or []:
        kind = mine.get(tuple(sorted(pg.get("ranks") or [])))
        if kind and pg.get("pg_desc") and pg["pg_desc"] != "default_pg":
            out[str(pg["pg_desc"])] = kind
    return out


def _hosts(environ: Mapping[str, str]) -> list[str]:
    from slurm_supernode.hostlist import HostlistError, expand

    try:
        return expand(environ.get("SNRUN_NODELIST", ""))
    except HostlistError:
        return []


def window_from_environ(environ: Mapping[str, str], recorder: StepRecorder) -> CommWindow | None:
    """The rank's window as the agent set it up; None where profiling is off."""
    try:
        after = int(environ.get(AFTER_ENV) or 50)
        steps = int(environ.get(STEPS_ENV) or 0)
    except ValueError:
        return None
    job_dir = environ.get("SNRUN_JOB_DIR")
    if not job_dir:
        return None
    attempt = int(environ.get("SNRUN_ATTEMPT") or 0)
    return CommWindow(
        Path(job_dir),
        attempt,
        recorder.rank,
        recorder.node,
        after=after,
        steps=steps,
        environ=environ,
    )
