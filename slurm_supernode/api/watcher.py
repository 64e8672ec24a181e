"""One Slurm query per poll for every job a process watches, polled less often while nothing
changes.

A notebook that waits on two hundred jobs must not run two hundred ``scontrol`` a second (as a
per-job poll would): the controller answers one ``scontrol show job`` (or pyslurm's one call,
where it serves this Slurm; slurm/job_lookup.py decides) with every job it knows, and each
watched job's record is taken from that answer. (A process that watches one job asks for that
job alone: on a busy cluster the whole queue is a large answer.) A watched job the controller
no longer knows (it ended longer ago than MinJobAge) is looked up once in the completion log
or accounting; its record is final and is never asked for again.

The interval between polls starts at ``first`` seconds and grows by ``factor`` after every
poll in which no watched job changed state, up to ``most`` (a minute by default); a change, or
a newly watched job, brings it back to ``first``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from slurm_supernode.slurm.jobinfo import JobInfo

# While waiting, a chain's ledger (a local file) is read at least this often; Slurm on the
# watcher's schedule.
LEDGER_POLL = 1.0


@dataclass(frozen=True)
class Backoff:
    """How the interval between polls grows while nothing changes."""

    first: float = 2.0
    most: float = 60.0
    factor: float = 1.5

    def after(self, interval: float, *, changed: bool) -> float:
        """The interval after a poll that saw a change (or not)."""
        return self.first if changed else min(self.most, interval * self.factor)


def _controller_jobs(job_ids: frozenset[int]) -> list[JobInfo]:
    """One controller query: the one job, or every job the controller knows."""
    from slurm_supernode.slurm.job_lookup import jobs_in_one_query

    return jobs_in_one_query(job_ids)


def _lookup_one(job_id: int) -> JobInfo | None:
    from slurm_supernode.slurm.job_lookup import job_info

    return job_info(job_id)


class Watcher:
    """The records of the jobs this process watches, from one query per poll.

    ``query`` returns (at least) the given jobs the controller knows, in one query; ``lookup``
    finds one job the controller no longer knows; ``clock`` is monotonic seconds. (Defaults:
    the Slurm layer and ``time.monotonic``; tests give their own.)
    """

    def __init__(
        self,
        backoff: Backoff | None = None,
        *,
        query: Callable[[frozenset[int]], list[JobInfo]] = _controller_jobs,
        lookup: Callable[[int], JobInfo | None] = _lookup_one,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.backoff = backoff or Backoff()
        self.interval = self.backoff.first
        self.polls = 0  # Slurm queries made (the controller's; one-off lookups not counted)
        self._query = query
        self._lookup = lookup
        self._clock = clock
        self._lock = threading.Lock()
        self._watched: set[int] = set()
        self._records: dict[int, JobInfo | None] = {}
        self._settled: set[int] = set()  # gone from the controller, final record known
        self._last: float | None = None

    @property
    def watched(self) -> frozenset[int]:
        return frozenset(self._watched)

    def watch(self, job_ids: Iterable[int]) -> None:
        """Include these jobs in the next poll (a new one makes the next poll come soon)."""
        with self._lock:
            new = set(job_ids) - self._watched
            if new:
                self._watched |= new
                self.interval = self.backoff.first

    def unwatch(self, job_ids: Iterable[int]) -> None:
        with self._lock:
            for job_id in job_ids:
                self._watched.discard(job_id)
                self._records.pop(job_id, None)
                self._settled.discard(job_id)

    def until_next_poll(self) -> float:
        """Seconds until the records are due for a refresh (0: now)."""
        if self._last is None:
            return 0.0
        return max(0.0, self._last + self.interval - self._clock())

    def record(self, job_id: int) -> JobInfo | None:
        """The job's record, polling Slurm first when a poll is due (the job is watched from
        now on). None: no source knows the job."""
        self.watch([job_id])
        if self.until_next_poll() <= 0 or job_id not in self._records:
            self.poll()
        return self._records.get(job_id)

    def poll(self) -> dict[int, JobInfo | None]:
        """Ask Slurm once for every watched job (none when every one has settled); returns the
        records."""
        with self._lock:
            asked = frozenset(self._watched - self._settled)
            known = {info.job_id: info for info in self._query(asked)} if asked else {}
            self.polls += 1
            changed = False
            for job_id in sorted(self._watched):
                if job_id in self._settled:
                    continue
                info = known.get(job_id)
                if info is None:  # ended before MinJobAge, or never existed: ask once
                    info = self._lookup(job_id)
                    self._settled.add(job_id)
                before = self._records.get(job_id, False)
                changed |= before is False or _state(before) != _state(info)
                self._records[job_id] = info
            self.interval = self.backoff.after(self.interval, changed=changed)
            self._last = self._clock()
            return dict(self._records)


def _state(info: JobInfo | bool | None) -> str | None:
    return str(info.state) if isinstance(info, JobInfo) else None


_shared: list[Watcher] = []


def shared_watcher() -> Watcher:
    """The process's watcher: every ``Job`` that is given none shares it, so one query serves
    them all (one per process, made on first use)."""
    if not _shared:
        _shared.append(Watcher())
    return _shared[0]
