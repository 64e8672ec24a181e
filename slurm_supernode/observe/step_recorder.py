"""The rank's step recorder: ``StepRecord`` lines of one rank, batched.

Driven by torch's process-wide optimizer-step hook (``runtime/step_hook``) or, where no hook
runs (spawned workers, a script without an optimizer), by the script's own
``slurm_supernode.progress.report`` calls. One per process, made from the environment the
agent gives the ranks (``SNRUN_JOB_DIR``, ``SNRUN_NODE``, ``SNRUN_ATTEMPT``, ``RANK``);
outside an snrun job there is none and every call is a no-op. Stdlib only: imported by every
rank and by ``progress``.

Writing: records are kept in memory and appended with one write every ``FLUSH_SECONDS`` (or
``FLUSH_RECORDS``), so a step costs a clock read and a small object; a rank killed loses at
most the last batch. A write that fails (full disk) drops the batch and is said once.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from slurm_supernode.observe.records import Record, StepRecord, append, steps_path

FLUSH_SECONDS = 2.0
FLUSH_RECORDS = 512
TOKENS_ENV = "SNRUN_TOKENS_PER_STEP"
SAMPLES_ENV = "SNRUN_SAMPLES_PER_STEP"


class StepRecorder:
    """One rank's step records: ``on_step`` at the end of each optimizer step."""

    def __init__(
        self,
        path: Path,
        rank: int,
        node: str,
        *,
        tokens_per_step: int | None = None,
        samples_per_step: int | None = None,
        checkpoint_dir: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path, self.rank, self.node = path, rank, node
        self.tokens_per_step, self.samples_per_step = tokens_per_step, samples_per_step
        self.checkpoint_dir = checkpoint_dir  # looked at on flush (local rank 0 only)
        self.clock = clock
        self.hooked = False  # a torch hook calls on_step: report() only adds figures
        self.step = 0
        self._last = clock()  # the first step's time includes the script's start
        self.cpu_clock: Callable[[], float] = time.thread_time  # the stepping thread's CPU time
        self._last_cpu = self.cpu_clock()
        self._flushed = self._last
        self._buffer: list[Record] = []
        self._pending: dict[str, float | int] = {}
        self._checkpoint_t: float | None = None
        self._failed = False

    def note(
        self,
        tokens: int | None = None,
        samples: int | None = None,
        loss: float | None = None,
        checkpoint: bool = False,
    ) -> None:
        """Figures of the current step (the next ``on_step`` carries them)."""
        for key, value in (("tokens", tokens), ("samples", samples), ("loss", loss)):
            if value is not None:
                self._pending[key] = value
        if checkpoint:
            self._checkpoint_t = self.clock()

    def on_step(self) -> StepRecord:
        now, cpu = self.clock(), self.cpu_clock()
        self.step += 1
        pending, self._pending = self._pending, {}
        tokens = pending.get("tokens", self.tokens_per_step)
        samples = pending.get("samples", self.samples_per_step)
        loss = pending.get("loss")
        record = StepRecord(
            t=now,
            rank=self.rank,
            node=self.node,
            step=self.step,
            seconds=now - self._last,
            tokens=int(tokens) if tokens is not None else None,
            samples=int(samples) if samples is not None else None,
            loss=float(loss) if loss is not None else None,
            busy_s=cpu - self._last_cpu,
        )
        self._last, self._last_cpu = now, cpu
        self._buffer.append(record)
        if now - self._flushed >= FLUSH_SECONDS or len(self._buffer) >= FLUSH_RECORDS:
            self.flush()
        return record

    def flush(self) -> None:
        if not self._buffer:
            return
        buffer, self._buffer = self._buffer, []
        self._flushed = self.clock()
        checkpoint_t = self._newest_checkpoint()
        if checkpoint_t is not None and isinstance(buffer[-1], StepRecord):
            from dataclasses import replace

            buffer[-1] = replace(buffer[-1], checkpoint_t=checkpoint_t)
        try:
            append(self.path, buffer)
        except OSError as exc:
            if not self._failed:
                self._failed = True
                print(
                    f"snrun: observe: rank {self.rank}: cannot write {self.path}: "
                    f"{exc.strerror or exc}; step records dropped",
                    file=sys.stderr,
                )

    def _newest_checkpoint(self) -> float | None:
        """The newest of the script's own mark and the checkpoint folder's newest entry."""
        found = newest_mtime(self.checkpoint_dir) if self.checkpoint_dir else None
        marks = [t for t in (found, self._checkpoint_t) if t is not None]
        return max(marks) if marks else None


def newest_mtime(folder: str) -> float | None:
    """The newest modification time among ``folder``'s entries and theirs (two levels: a
    checkpoint is often a folder per step); None for an empty or missing folder."""
    newest: float | None = None
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                t = entry.stat(follow_symlinks=False).st_mtime
                newest = t if newest is None else max(newest, t)
    except OSError:
        return None
    return newest


_current: list[StepRecorder] = []  # this process's recorder: the hook is process-wide too


def from_environ(environ: Mapping[str, str]) -> StepRecorder | None:
    """The recorder the agent's variables describe; None outside an snrun rank."""
    from slurm_supernode.jobenv import JobEnvironment

    job_dir, node = environ.get("SNRUN_JOB_DIR"), environ.get("SNRUN_NODE")
    try:
        env = JobEnvironment.from_environ(environ)
    except Exception:  # a bad number: no records, the script runs
        return None
    if not job_dir or not node or env.rank is None:
        return None
    attempt, rank_n = env.attempt, env.rank
    first = env.local_rank in (None, 0)
    return StepRecorder(
        steps_path(Path(job_dir), attempt, rank_n),
        rank_n,
        node,
        tokens_per_step=_count(environ.get(TOKENS_ENV)),
        samples_per_step=_count(environ.get(SAMPLES_ENV)),
        checkpoint_dir=(environ.get("SNRUN_CHECKPOINT_DIR") or None) if first else None,
    )


def _count(text: str | None) -> int | None:
    try:
        value = int(text) if text else None
    except ValueError:
        return None
    return value if value is not None and value > 0 else None


def install(environ: Mapping[str, str] | None = None) -> StepRecorder | None:
    """This process's recorder, made on first use from ``environ`` (default ``os.environ``)."""
    if _current:
        return _current[0]
    recorder = from_environ(os.environ if environ is None else environ)
    if recorder is not None:
        _current.append(recorder)
    return recorder


def current() -> StepRecorder | None:
    return _current[0] if _current else None
