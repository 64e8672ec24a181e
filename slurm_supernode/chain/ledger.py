"""The attempt ledger: an append-only JSON-lines file in the job directory.

Several processes on several nodes append to it (supervisor, agents), so every append happens
under a ``filelock`` and is one ``write`` of one line. A writer killed mid-line leaves a torn
last line: the next writer starts on a fresh line and readers skip what does not parse.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LEDGER = "ledger.jsonl"


def ledger_path(job_dir: Path) -> Path:
    return job_dir / LEDGER


def append(job_dir: Path, event: str, **fields: Any) -> dict[str, Any]:
    """Append one record ``{"event", "time", **fields}``; returns it."""
    record = {"event": event, "time": round(time.time(), 3), **fields}
    with _locked(job_dir) as path:
        _write_record(path, record)
    return record


def append_final(job_dir: Path, **fields: Any) -> dict[str, Any] | None:
    """Write the chain's final record (``state``, ``reason``, ...) unless it already has one:
    ended is ended. The check and the write happen under the one lock, so of a supervisor
    completing and a ``snrun cancel`` at the same moment exactly one is the chain's end.
    Returns the record written, or None when an earlier final record stands."""
    record = {"event": "final", "time": round(time.time(), 3), **fields}
    with _locked(job_dir) as path:
        if fold(read(job_dir)).final is not None:
            return None
        _write_record(path, record)
    return record


@contextlib.contextmanager
def _locked(job_dir: Path) -> Iterator[Path]:
    path = ledger_path(job_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    from filelock import FileLock  # here, not at import: keeps `snrun --dry-run` light

    with FileLock(str(path) + ".lock", timeout=60):
        yield path


def _write_record(path: Path, record: dict[str, Any]) -> None:
    """One ``write`` of one line (the caller holds the lock)."""
    line = json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as fh:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    line = "\n" + line  # a torn line before us: start fresh
        os.write(fd, line.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def read(job_dir: Path) -> Iterator[dict[str, Any]]:
    """Every complete record, in order; torn or foreign lines are skipped."""
    path = ledger_path(job_dir)
    if not path.exists():
        return
    with open(path, encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            if not raw.endswith("\n"):
                continue
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if isinstance(rec, dict) and "event" in rec:
                yield rec


@dataclass
class Attempt:
    """One attempt, folded from its ledger records."""

    attempt: int
    job_id: int | None = None
    start: float | None = None
    end: float | None = None
    nodes: str | None = None
    exit_code: int | None = None
    node_exits: dict[str, int] = field(default_factory=dict)
    # failed ranks from torchrun's report: {"node", "rank", "local_rank", "exit_code", "first"}
    ranks: list[dict[str, Any]] = field(default_factory=list)
    # nodes whose agent stopped on a configuration error before torchrun (the error's text)
    config_errors: dict[str, str] = field(default_factory=dict)
    # node -> "rank R: Type: message" of its first rank that raised (rank_failed, by the rank)
    rank_errors: dict[str, str] = field(default_factory=dict)
    rank_error_times: dict[str, float] = field(default_factory=dict)  # when each failed
    rank_points: dict[str, str] = field(default_factory=dict)  # node -> where that rank failed
    # every rank_failed: {"rank", "local_rank", "node", "error", "at"}; ``at``: when the rank
    # failed (killed by a signal: when it died), the order ``snrun status`` names ranks in
    rank_failures: list[dict[str, Any]] = field(default_factory=list)
    # nodes whose container did not start -> why (the runtime's last words)
    container_failed: dict[str, str] = field(default_factory=dict)
    # nodes whose IMEX preflight failed, or whose ranks' NCCL said the channel is missing -> why
    imex_failed: dict[str, str] = field(default_factory=dict)
    # nodes stopped (another failed first) before their container started
    container_unstarted: list[str] = field(default_factory=list)
    cause: str | None = None
    action: str | None = None
    detail: str | None = None
    progress: str | None = None


@dataclass
class Chain:
    """A job chain: every attempt and the final state (if the chain ended)."""

    attempts: list[Attempt]
    final: dict[str, Any] | None
    job_ids: list[int]


def fold(records: list[dict[str, Any]] | Iterator[dict[str, Any]]) -> Chain:
    """Attempts and final state from ledger records."""
    attempts: dict[int, Attempt] = {}
    final = None
    job_ids: list[int] = []
    for rec in records:
        jid = rec.get("job_id")
        if isinstance(jid, int) and jid not in job_ids:
            job_ids.append(jid)
        ev = rec["event"]
        if ev == "final":
            final = final or rec  # the first one is the end (a later one is never honoured)
            continue
        n = rec.get("attempt")
        if not isinstance(n, int):
            continue
        a = attempts.setdefault(n, Attempt(attempt=n))
        if ev == "attempt_start":
            a.start, a.job_id, a.nodes = rec["time"], jid, rec.get("nodes")
        elif ev == "node_exit":
            node = rec.get("node", "?")
            a.node_exits[node] = rec.get("exit_code", -1)
            a.ranks += [{"node": node, **r} for r in rec.get("ranks") or () if isinstance(r, dict)]
            if rec.get("config_error"):
                a.config_errors[node] = str(rec.get("error") or "configuration error")
            if rec.get("container_failed"):
                a.container_failed[node] = str(rec.get("error") or "")
            if rec.get("imex_failed"):
                a.imex_failed[node] = str(rec.get("error") or "IMEX")
            if rec.get("container_unstarted"):
                a.container_unstarted.append(node)
        elif ev == "rank_failed":
            node = str(rec.get("node", "?"))
            # the node's earliest failure: a rank killed by a signal is recorded by its agent
            # after its peers' errors about it, but carries when it died
            at = rec.get("died", rec.get("time"))
            at = float(at) if isinstance(at, (int, float)) else math.inf
            a.rank_failures.append(
                {
                    "rank": rec.get("rank"),
                    "local_rank": rec.get("local_rank"),
                    "node": node,
                    "error": rec.get("error"),
                    "at": at,
                }
            )
            if node not in a.rank_errors or at < a.rank_error_times[node]:
                a.rank_errors[node] = f"rank {rec.get('rank')}: {rec.get('error')}"
                a.rank_error_times[node] = at
                a.rank_points.pop(node, None)
                if isinstance(rec.get("point"), str):
                    a.rank_points[node] = rec["point"]
        elif ev == "attempt_end":
            a.end = rec["time"]
            a.exit_code = rec.get("exit_code")
            a.cause = rec.get("cause")
            a.action = rec.get("action")
            a.detail = rec.get("detail")
            a.progress = rec.get("progress")
    return Chain(attempts=[attempts[k] for k in sorted(attempts)], final=final, job_ids=job_ids)


def rank_failures(job_dir: Path) -> dict[int, list[dict[str, Any]]]:
    """Attempt -> its ranks' failures, in the order they were recorded (``Attempt.rank_failures``:
    what ``forensics.logs.first_error`` orders the failing ranks by)."""
    return {a.attempt: a.rank_failures for a in fold(read(job_dir)).attempts}


def next_attempt(job_dir: Path) -> int:
    """Number of the next attempt: one more than the highest recorded."""
    chain = fold(read(job_dir))
    return (chain.attempts[-1].attempt + 1) if chain.attempts else 0


def current_job_id(job_dir: Path) -> int | None:
    """The newest Slurm job id of the chain (requeues keep it, resubmissions add one)."""
    ids: set[int] = set()
    for rec in read(job_dir):
        for key in ("job_id", "new_job_id"):
            if isinstance(rec.get(key), int) and rec[key] > 0:
                ids.add(rec[key])
    with contextlib.suppress(OSError, ValueError):
        ids.update(json.loads((job_dir / "job.json").read_text()).get("job_ids", []))
    return max(ids) if ids else None
