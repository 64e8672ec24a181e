"""A chain's per-rank logs as lines (``[node/rank] text``), once or followed as they grow.

The logs are kept per attempt in the job directory (forensics/logs.py); following moves on
to each new attempt unless one is asked for, and ends once the chain has a final record and
nothing more was written.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from slurm_supernode.errors import InputError

if TYPE_CHECKING:
    from slurm_supernode.forensics.logs import RankLog

STREAMS = ("stdout", "stderr")


@dataclass(frozen=True)
class LogSelection:
    """Which logs: an attempt (None: the newest), a node, ranks, streams, the last N lines."""

    attempt: int | None = None
    node: str | None = None
    ranks: tuple[int, ...] = ()
    streams: tuple[str, ...] = STREAMS
    tail: int | None = None

    def check(self, job_dir: Path) -> list[int]:
        """The attempts with logs; an attempt or tail that cannot be shown is refused."""
        from slurm_supernode.forensics.logs import attempts_with_logs

        if self.tail is not None and self.tail < 0:
            raise InputError("--tail must be >= 0", where="--tail")
        if any(s not in STREAMS for s in self.streams):
            raise InputError(f"streams are {', '.join(STREAMS)}", where="--stream")
        known = attempts_with_logs(job_dir)
        if self.attempt is not None and self.attempt not in known:
            raise InputError(
                f"attempt {self.attempt} has no logs in {job_dir}",
                where="--attempt",
                hint="attempts with logs: " + (", ".join(map(str, known)) or "none yet"),
            )
        return known

    def pick(self, logs: list[RankLog]) -> list[RankLog]:
        """The rank logs selected; a node or rank the attempt does not have is refused."""
        picked = [
            r
            for r in logs
            if (not self.node or r.node == self.node) and (not self.ranks or r.rank in self.ranks)
        ]
        if logs and not picked and (self.node or self.ranks):
            what = "--rank" if self.ranks else "--node"
            have = sorted({str(r.rank) if self.ranks else r.node for r in logs})
            raise InputError(
                "no such rank/node in this attempt", where=what, hint="have: " + ", ".join(have)
            )
        return picked


def open_logs(
    job_dir: Path, selection: LogSelection, *, follow: bool = False
) -> Iterator[str] | None:
    """The selected lines (``follow``: as they come, see ``follow_lines``); None when no
    attempt has logs yet and nothing is followed. A selection that cannot be shown (no such
    attempt, rank or node) is refused here, before any line. An attempt whose container did
    not start has no rank logs: its runtime's lines come instead (api/container_logs.py)."""
    from slurm_supernode.api.container_logs import container_lines

    wants = not selection.ranks and "stderr" in selection.streams  # node lines, on stderr
    if wants and selection.attempt is not None and not follow:
        _, lines = container_lines(job_dir, selection.attempt, selection.node, [])
        if lines:
            return iter(lines)  # that attempt ran no rank: no rank logs to look for
    known = selection.check(job_dir)
    if follow:
        return follow_lines(job_dir, selection)
    shown, lines = container_lines(job_dir, None, selection.node, known) if wants else (None, [])
    if lines and shown not in known:
        return iter(lines)
    if not known:
        return None
    ranks = log_lines(job_dir, selection, known)
    return itertools.chain(lines, ranks) if lines else ranks


def log_lines(job_dir: Path, selection: LogSelection, known: list[int]) -> Iterator[str]:
    """The selected logs of one attempt (of ``known``), merged and rank-prefixed."""
    from slurm_supernode.forensics.logs import merged, rank_logs

    attempt = known[-1] if selection.attempt is None else selection.attempt
    logs = selection.pick(rank_logs(job_dir, attempt))
    return merged(logs, selection.streams, selection.tail)


def follow_lines(job_dir: Path, selection: LogSelection, poll: float = 0.5) -> Iterator[str]:
    """New lines as they are written (``== attempt N ==`` when a new attempt starts); ends when
    the chain has a final record and two polls in a row found nothing new."""
    from slurm_supernode.chain import ledger
    from slurm_supernode.forensics.logs import attempts_with_logs, rank_logs

    offsets: dict[str, int] = {}
    attempt = selection.attempt
    idle = 0
    while True:
        known = attempts_with_logs(job_dir)
        if selection.attempt is None and known and known[-1] != attempt:
            attempt = known[-1]
            yield f"== attempt {attempt} =="
        wrote = False
        if attempt is not None:
            for r in selection.pick(rank_logs(job_dir, attempt)):
                for stream in selection.streams:
                    prefix = f"[{r.label}{'' if stream == 'stdout' else ' err'}]"
                    for line in _new_lines(getattr(r, stream), offsets, selection.tail):
                        wrote = True
                        yield f"{prefix} {line}"
        idle = 0 if wrote else idle + 1
        if ledger.fold(ledger.read(job_dir)).final and idle >= 2:
            return
        time.sleep(poll)


def _new_lines(path: Path, offsets: dict[str, int], tail: int | None) -> list[str]:
    """The complete lines written to ``path`` since the last call (the first call: all of
    them, or the last ``tail``)."""
    key = str(path)
    try:
        size = path.stat().st_size
    except OSError:
        return []
    start = offsets.get(key)
    if start is None:  # first sight: honour --tail
        text = path.read_text(errors="replace")
        complete = text[: text.rfind("\n") + 1]
        lines = complete.splitlines()
        offsets[key] = len(complete.encode(errors="replace"))
        return lines[-tail:] if tail else lines
    if size <= start:
        return []
    with open(path, "rb") as fh:
        fh.seek(start)
        chunk = fh.read(size - start)
    end = chunk.rfind(b"\n") + 1
    offsets[key] = start + end
    return chunk[:end].decode(errors="replace").splitlines()
