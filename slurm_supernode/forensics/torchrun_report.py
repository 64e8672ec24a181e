"""Per-rank exit codes from torchrun's failure report.

torchrun only returns 1 when a worker fails, but it prints which ranks failed and how
(``ChildFailedError``: a "Root Cause (first observed failure)" block and "Failures" blocks, each
with ``rank : R (local_rank: L)`` and ``exitcode : C (pid: P)``; negative codes are signals). The
agent keeps the tail of torchrun's stderr and records these per rank in the ledger. Pure.
"""

from __future__ import annotations

import re
import signal
from typing import Any

_MARKER = "ChildFailedError"
_ROOT = "Root Cause (first observed failure):"
_ENTRY = re.compile(
    r"^\s*rank\s*:\s*(\d+)\s*\(local_rank:\s*(\d+)\)\s*\n\s*exitcode\s*:\s*(-?\d+)"
    r"(?:\s*\(pid:\s*(\d+)\))?",
    re.MULTILINE,
)


def parse_failures(text: str) -> list[dict[str, Any]]:
    """Failed ranks of torchrun's last failure report, sorted by rank: ``{"rank", "local_rank",
    "exit_code", "first"}`` plus ``"signal"`` (e.g. ``"SIGKILL"``) for a negative code. ``first``
    marks torchrun's root cause. Empty when the text holds no report."""
    start = text.rfind(_MARKER)
    if start < 0:
        return []
    report = text[start:]
    root = report.find(_ROOT)
    out: dict[int, dict[str, Any]] = {}
    for m in _ENTRY.finditer(report):
        rank, local_rank, code = int(m.group(1)), int(m.group(2)), int(m.group(3))
        entry: dict[str, Any] = {
            "rank": rank,
            "local_rank": local_rank,
            "exit_code": code,
            "first": root >= 0 and m.start() > root,
        }
        if code < 0:
            try:
                entry["signal"] = signal.Signals(-code).name
            except ValueError:
                entry["signal"] = f"signal {-code}"
        if rank not in out or entry["first"]:
            out[rank] = entry
    return [out[r] for r in sorted(out)]


def rank_pids(text: str) -> dict[int, int]:
    """rank -> the process id torchrun names for it in its last failure report."""
    start = text.rfind(_MARKER)
    if start < 0:
        return {}
    return {int(m.group(1)): int(m.group(4)) for m in _ENTRY.finditer(text[start:]) if m.group(4)}


def describe(ranks: list[dict[str, Any]], limit: int = 4) -> str:
    """``rank 1=3 first, rank 0=SIGTERM``: short text for a ledger detail."""
    ordered = sorted(ranks, key=lambda r: (not r.get("first"), r["rank"]))
    parts = []
    for r in ordered[:limit]:
        how = r.get("signal") or str(r["exit_code"])
        parts.append(f"rank {r['rank']}={how}" + (" first" if r.get("first") else ""))
    if len(ordered) > limit:
        parts.append(f"+{len(ordered) - limit} more")
    return ", ".join(parts)


def earliest_first(ranks: list[dict[str, Any]], cause_rank: int | None) -> list[dict[str, Any]]:
    """The ranks with ``first`` on the chain's earliest failure only.

    Each node's torchrun marks its own root cause ``first``; over several nodes that is one
    "first" per node. The chain's first failure is the rank whose error file is the earliest
    (``cause_rank``, what the cause line names). Without one, a single torchrun's mark stands
    (one node); several nodes' marks cannot be ordered, so none is kept.
    """
    if cause_rank is None:
        marked = [r for r in ranks if r.get("first")]
        return [{**r, "first": len(marked) == 1 and bool(r.get("first"))} for r in ranks]
    return [{**r, "first": r["rank"] == cause_rank} for r in ranks]
