"""``Job``: a handle on one submitted chain (its job directory and its job ids).

Everything it says comes from the job directory (the ledger the supervisor writes, the logs)
and from Slurm's record of the chain's newest job id, which a ``Watcher`` fetches for every job
of the process in one query. A handle is cheap: ``Job.from_id`` makes one for a chain
submitted earlier, by any attempt's job id or by its directory.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from slurm_supernode.api.chain_state import ChainState, chain_job_ids, chain_state
from slurm_supernode.api.logs import STREAMS, LogSelection
from slurm_supernode.api.watcher import LEDGER_POLL, Watcher, shared_watcher
from slurm_supernode.api.wording import in_api_words
from slurm_supernode.chain import ledger
from slurm_supernode.errors import JobError

if TYPE_CHECKING:
    from slurm_supernode.api.cancel import CancelOutcome
    from slurm_supernode.launch.jobspec import JobSpec

# Slurm says the chain's job ended but the ledger has no final record: wait this long for one
# (the supervisor writes it just before its job ends) before believing Slurm alone.
FINAL_RECORD_GRACE = 5.0


class WaitTimeout(JobError):
    """``Job.wait`` gave up: the chain had not ended within the timeout."""


class NeverStarts(JobError):
    """``Job.wait`` gave up: the chain's job waits for something that can never come
    (``ChainState.never_starts``: a dependency never satisfied, a partition that cannot serve
    it); ``state`` says which. Cancel it, or change what it asks for. ``Sweep.wait`` raises it
    too: ``state`` is then the first such task's, ``summary`` the sweep's status."""

    def __init__(
        self,
        message: str,
        *,
        where: str,
        state: ChainState,
        hint: str | None = None,
        summary: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message, where=where, hint=hint or f"snrun cancel {state.job_id}")
        self.state = state
        self.summary = summary  # a sweep's: its status (``Sweep.status()``) then


class Job:
    """A submitted job chain."""

    def __init__(self, job_dir: Path, job_id: int, *, watcher: Watcher | None = None) -> None:
        self.job_dir = Path(job_dir)
        self.job_id = job_id  # the first job id (``snrun`` printed it)
        self.watcher = watcher or shared_watcher()
        self.watcher.watch([self.current_job_id()])

    def __repr__(self) -> str:
        return f"Job({self.job_id}, {str(self.job_dir)!r})"

    @classmethod
    @in_api_words
    def from_id(
        cls,
        job: int | str | Path,
        *,
        jobs_dir: str | Path | None = None,
        site: str | None = None,
        watcher: Watcher | None = None,
    ) -> Job:
        """The chain a job id (any attempt's) or a job directory names; ``jobs_dir`` and
        ``site`` say where job directories are (default: ``$SNRUN_JOBS_DIR``, the site's)."""
        from slurm_supernode.api import arguments
        from slurm_supernode.api.status import find_job_dir

        arguments.check_job_ref(job)
        arguments.check_path_like(jobs_dir, "jobs_dir")
        arguments.check_type(site, str | None, "site")
        arguments.check_watcher(watcher)
        job_dir = find_job_dir(job, jobs_dir=jobs_dir, site=site)
        ids = chain_job_ids(job_dir)
        first = ids[0] if ids else None
        if first is None:
            raise JobError(f"{job_dir} has no job id: it was never submitted", where="JOB")
        return cls(job_dir, first, watcher=watcher)

    def job_ids(self) -> list[int]:
        """Every Slurm job id the chain used, oldest first."""
        return chain_job_ids(self.job_dir)

    def current_job_id(self) -> int:
        """The newest job id (a resubmission adds one; a requeue keeps it)."""
        return ledger.current_job_id(self.job_dir) or self.job_id

    def state(self) -> ChainState:
        """Where the chain stands now (Slurm is asked when the watcher's poll is due)."""
        job_id = self.current_job_id()
        chain = ledger.fold(ledger.read(self.job_dir))
        info = None if chain.final is not None else self.watcher.record(job_id)
        return chain_state(chain, job_id, info)

    def attempts(self) -> list[ledger.Attempt]:
        """The attempts so far, from the ledger (cause, action, exit code, failed ranks...)."""
        return ledger.fold(ledger.read(self.job_dir)).attempts

    def summary(self) -> dict[str, Any]:
        """What ``snrun status JOB`` shows: attempts with their evidence, job ids, state."""
        from slurm_supernode.chain.status import chain_summary

        return chain_summary(self.job_dir)

    def wait(
        self,
        timeout: float | None = None,
        progress: Callable[[ChainState], object] | None = None,
        *,
        sleep: Callable[[float], object] = time.sleep,
    ) -> ChainState:
        """Until the chain has ended (its final ledger record; or Slurm's record says it ended
        with nobody to record it, for ``FINAL_RECORD_GRACE`` s). ``progress`` is called with
        each new state; an ended one only once it is the final one (Slurm's word alone, read a
        moment before the ledger's final record, is held back meanwhile). Raises
        ``WaitTimeout`` after ``timeout`` seconds."""
        from slurm_supernode.api.arguments import check_callable, check_seconds

        timeout = check_seconds(timeout, "timeout")
        check_callable(progress, "progress")
        deadline = None if timeout is None else time.monotonic() + timeout
        last: ChainState | None = None
        slurm_only_since: float | None = None
        while True:
            now = self.state()
            if now.ended and now.source != "ledger":
                # Slurm's word alone: give a just-written final record a chance
                slurm_only_since = slurm_only_since or time.monotonic()
                settled = time.monotonic() - slurm_only_since >= FINAL_RECORD_GRACE
            else:
                slurm_only_since = None
                settled = now.ended
            if progress is not None and now != last and (settled or not now.ended):
                progress(now)
                last = now
            if settled:
                return now
            if now.never_starts:
                raise NeverStarts(
                    f"job {now.job_id} can never start: {now.reason}",
                    where=str(self.job_dir),
                    state=now,
                )
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(
                    f"job {self.job_id} did not end within {timeout:g} s (now {now})",
                    where=str(self.job_dir),
                )
            pause = min(LEDGER_POLL, max(0.05, self.watcher.until_next_poll()))
            if deadline is not None:
                pause = min(pause, max(0.0, deadline - time.monotonic()))
            sleep(pause)

    @in_api_words
    def logs(
        self,
        rank: int | Sequence[int] | None = None,
        follow: bool = False,
        *,
        attempt: int | None = None,
        node: str | None = None,
        streams: Sequence[str] = STREAMS,
        tail: int | None = None,
    ) -> Iterator[str]:
        """The per-rank log lines (``[rank R] ...``; stderr ``[rank R err] ...``) of the newest
        attempt (or ``attempt``); ``follow``: new lines as they come, across new attempts,
        until the chain has ended."""
        from slurm_supernode.api.arguments import check_log_selection, check_ranks, check_type
        from slurm_supernode.api.logs import open_logs

        ranks = check_ranks(rank)
        check_type(follow, bool, "follow")
        streams = check_log_selection(attempt, node, streams, tail)
        selection = LogSelection(attempt, node, ranks, tuple(streams), tail)
        return open_logs(self.job_dir, selection, follow=follow) or iter(())

    @in_api_words
    def then(self, spec: JobSpec, when: str = "ok") -> Job:
        """Submit ``spec`` to start once this chain has ended ``when`` (``ok``, ``any`` or
        ``notok``), its requeues and resubmissions included (chain/dependents.py says how)."""
        from slurm_supernode.api.arguments import check_spec, check_when
        from slurm_supernode.api.submit_plan import submit_dependent

        spec, when = check_spec(spec), check_when(when)
        job_dir, job_id = submit_dependent(str(self.job_dir), spec, when)
        return Job(job_dir, job_id, watcher=self.watcher)

    def cancel(self) -> CancelOutcome:
        """End the chain (api/cancel.py): ``.job_ids`` it cancelled. A chain that has ended
        is left as it ended: ``.ended`` names that state and nothing is changed."""
        from slurm_supernode.api.cancel import cancel_chain

        return cancel_chain(self.job_dir)

    @in_api_words
    def attach(
        self,
        command: Sequence[str] = (),
        *,
        node: str | None = None,
        py_spy: bool = False,
        ranks: Sequence[int] = (),
        out: TextIO | None = None,
    ) -> int:
        """A command (default: a shell) on a node of the running job, or with ``py_spy`` the
        ranks' stacks; its exit code (api/attach.py)."""
        from slurm_supernode.api.arguments import check_ranks, check_type
        from slurm_supernode.api.attach import attach

        command = check_type(command, tuple[str, ...], "command")
        check_type(node, str | None, "node")
        check_type(py_spy, bool, "py_spy")
        ranks = check_ranks(ranks, "ranks")
        return attach(self.job_dir, command, node=node, py_spy=py_spy, ranks=ranks, out=out)
