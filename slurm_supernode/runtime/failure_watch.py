"""Which nodes failed first in an attempt: from the ledger as the supervisor polls it (fail
fast), then ordered by when each failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from slurm_supernode.chain import ledger


class FailureWatch:
    """Nodes with a rank that raised (``rank_failed``, written by the rank itself) or whose
    agent reported a non-zero exit in ``attempt``, first failure first. The ledger is read
    again only when it grew (the supervisor looks every ``poll``)."""

    def __init__(self, job_dir: Path, attempt: int) -> None:
        self._job_dir, self._attempt, self._size = job_dir, attempt, -1

    def __call__(self) -> tuple[str, ...]:
        try:
            size = ledger.ledger_path(self._job_dir).stat().st_size
        except OSError:
            return ()
        if size == self._size:
            return ()
        self._size = size
        return tuple(
            dict.fromkeys(
                str(rec.get("node"))
                for rec in ledger.read(self._job_dir)
                if rec.get("attempt") == self._attempt
                and (
                    rec["event"] == "rank_failed"
                    or (rec["event"] == "node_exit" and rec.get("exit_code") not in (0, None))
                )
            )
        )


def failed_by_time(
    records: Iterable[dict[str, Any]], attempt: int, first: Sequence[str]
) -> tuple[str, ...]:
    """``first`` (the nodes that failed first, as the supervisor saw them reported) plus the
    nodes with a rank killed by a signal, ordered by when they failed: a signal death is
    recorded by its agent after torchrun's report, later than a peer's error about it, but
    carries when the rank died (``died``). Without ``first`` (no fail fast) nothing is added."""
    if not first:
        return ()
    when: dict[str, float] = {}
    for rec in records:
        if rec.get("attempt") != attempt:
            continue
        node = str(rec.get("node"))
        died = rec.get("died") if rec["event"] == "rank_failed" else None
        failed = rec["event"] == "rank_failed" or (
            rec["event"] == "node_exit"
            and rec.get("exit_code") not in (0, None)
            and not rec.get("stopped")
        )
        if (node in first and failed) or isinstance(died, (int, float)):
            at = float(died) if isinstance(died, (int, float)) else float(rec["time"])
            when[node] = min(at, when.get(node, at))
    nodes = dict.fromkeys([*first, *when])
    return tuple(sorted(nodes, key=lambda n: when.get(n, float("inf"))))
