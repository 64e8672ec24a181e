"""Per-rank logs and error files of a job, kept per attempt in the job directory.

Each agent gives torchrun ``--log-dir=<job dir>/logs/attempt<N>/<node>`` (``--redirects=3
--tee=3``), so torchrun writes ``<run id>_<x>/attempt_0/<local rank>/{stdout,stderr}.log`` and
``error.json`` (torchelastic's error file) there. Attempt numbers run across restarts, requeues
and resubmissions of one chain, so every attempt keeps its own logs. The global rank is the
node rank (``env/<node>.<attempt>.json``) times the processes per node plus the local rank.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_ATTEMPT = re.compile(r"^attempt(\d+)$")


def node_log_dir(job_dir: Path, attempt: int, node: str) -> Path:
    return job_dir / "logs" / f"attempt{attempt}" / node


def attempt_dir(job_dir: Path, attempt: int) -> Path:
    return job_dir / "logs" / f"attempt{attempt}"


def attempts_with_logs(job_dir: Path) -> list[int]:
    root = job_dir / "logs"
    found = []
    if root.is_dir():
        for entry in root.iterdir():
            m = _ATTEMPT.match(entry.name)
            if m and entry.is_dir():
                found.append(int(m.group(1)))
    return sorted(found)


@dataclass(frozen=True)
class RankLog:
    """The files torchrun kept for one rank of one attempt."""

    attempt: int
    node: str
    rank: int | None  # None when the node's record is missing
    local_rank: int
    folder: Path

    @property
    def stdout(self) -> Path:
        return self.folder / "stdout.log"

    @property
    def stderr(self) -> Path:
        return self.folder / "stderr.log"

    @property
    def error_file(self) -> Path:
        return self.folder / "error.json"

    @property
    def label(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else f"{self.node}/{self.local_rank}"


def _node_layout(job_dir: Path, node: str, attempt: int) -> tuple[int | None, int | None]:
    """(node rank, processes per node) from the agent's record of the attempt."""
    try:
        rec = json.loads((job_dir / "env" / f"{node}.{attempt}.json").read_text())
    except (OSError, ValueError):
        return None, None
    nproc = None
    for arg in rec.get("argv", []):
        if isinstance(arg, str) and arg.startswith("--nproc-per-node="):
            nproc = int(arg.split("=", 1)[1])
    return rec.get("node_rank"), nproc


def rank_logs(job_dir: Path, attempt: int) -> list[RankLog]:
    """Every rank's log folder of ``attempt``, sorted by rank."""
    out: list[RankLog] = []
    root = attempt_dir(job_dir, attempt)
    if not root.is_dir():
        return []
    for node_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        node_rank, nproc = _node_layout(job_dir, node_dir.name, attempt)
        # torchrun's own restarts (attempt_K) stay at 0 under snrun; take the newest anyway.
        for run in sorted(node_dir.glob("*/attempt_*"), key=lambda p: p.stat().st_mtime):
            for folder in sorted(run.iterdir(), key=lambda p: p.name):
                if not folder.name.isdigit():
                    continue
                local = int(folder.name)
                rank = node_rank * nproc + local if node_rank is not None and nproc else None
                out = [r for r in out if not (r.node == node_dir.name and r.local_rank == local)]
                out.append(RankLog(attempt, node_dir.name, rank, local, folder))
    return sorted(out, key=lambda r: (r.rank is None, r.rank or 0, r.node, r.local_rank))


def split_error(text: str) -> tuple[str, str]:
    """``("RuntimeError", "boom")`` from ``RuntimeError: boom``; ``("", text)`` for words that
    name no exception type (``killed by signal 9 (SIGKILL)``)."""
    etype, sep, rest = text.partition(": ")
    return (etype, rest) if sep and " " not in etype else ("", text)


def read_error_file(path: Path) -> dict[str, Any] | None:
    """torchelastic's error file: ``{"message": {"message": "Type: text", "extraInfo":
    {"py_callstack": ..., "timestamp": ...}}}`` (torch's @record; an older form has a plain
    string message). None when missing or unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    msg = data.get("message") if isinstance(data, dict) else None
    if isinstance(msg, dict):
        text = str(msg.get("message", ""))
        extra = msg.get("extraInfo") or {}
        stamp = extra.get("timestamp")
        trace = extra.get("py_callstack")
    elif isinstance(msg, str):
        text, stamp, trace = msg, data.get("timestamp"), None
    else:
        return None
    etype, rest = split_error(text)
    try:
        when = int(stamp) if stamp is not None else int(path.stat().st_mtime)
    except (TypeError, ValueError):
        when = int(path.stat().st_mtime)
    return {"type": etype, "message": rest, "timestamp": when, "traceback": trace}


def first_error(
    job_dir: Path, attempt: int, failures: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any] | None:
    """The first failing rank of the attempt, with the exception's type and message and where
    its full log is.

    ``failures``: the attempt's ``rank_failed`` records from the ledger (``{"rank",
    "local_rank", "node", "error", "at"}``, ``ledger.Attempt.rank_failures``): when each rank
    failed, written by the rank itself as it raised, or by its agent, dated when it last saw
    it alive, for a rank killed by a signal (which writes nothing). Ranks are ordered by that
    time; a rank the ledger does not have (its record could not be written) by its error
    file's timestamp, as torchelastic decides. The exception's words come from the rank's
    error file (torch's own, or snrun's error hook's) where it has one, else from its record."""
    logs = rank_logs(job_dir, attempt)
    by_rank = {r.rank: r for r in logs if r.rank is not None}
    by_place = {(r.node, r.local_rank): r for r in logs}
    when: dict[int, Mapping[str, Any]] = {}
    for f in failures:
        rank = f.get("rank")
        if isinstance(rank, int) and (rank not in when or f["at"] < when[rank]["at"]):
            when[rank] = f
    found: list[tuple[tuple[int, int], dict[str, Any]]] = []
    for r in logs:
        err = read_error_file(r.error_file)
        if not err:
            continue
        rec = when.pop(r.rank, None) if r.rank is not None else None
        # torch's timestamps are whole seconds: the file's own time breaks a tie
        order = _when(rec["at"]) if rec else (err["timestamp"], r.error_file.stat().st_mtime_ns)
        found.append((order, _failure(r, r.node, err["type"], err["message"])))
    for rank, rec in when.items():  # failed without an error file: killed by a signal
        node, local = str(rec.get("node")), rec.get("local_rank")
        folder = by_rank.get(rank) or (
            by_place.get((node, local)) if isinstance(local, int) else None
        )
        failure = _failure(folder, node, *split_error(str(rec.get("error") or "")), rank)
        if folder is None:  # torchrun made no folder for it: the node's logs
            failure["log"] = str(node_log_dir(job_dir, attempt, node))
        found.append((_when(rec["at"]), failure))
    if not found:
        return None
    first = min(found, key=lambda x: x[0])[1]
    return {**first, "failed_ranks": len(found)}


def _when(at: float) -> tuple[int, int]:
    """A ledger time as an error file's order key (whole seconds, then nanoseconds), so a rank
    that only has an error file compares right against one the ledger dates."""
    return (int(at), int(at * 1e9)) if at != math.inf else (2**62, 2**62)


def _failure(
    r: RankLog | None, node: str, etype: str, message: str, rank: int | None = None
) -> dict[str, Any]:
    return {
        "rank": r.rank if r and r.rank is not None else rank,
        "node": node,
        "local_rank": r.local_rank if r else None,
        "type": etype,
        "message": message,
        "error_file": str(r.error_file) if r and r.error_file.exists() else None,
        "log": str(r.stderr) if r else "",
    }


def tail_lines(path: Path, n: int | None) -> list[str]:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return lines[-n:] if n else lines


def merged(logs: list[RankLog], streams: tuple[str, ...], tail: int | None) -> Iterator[str]:
    """Each rank's lines prefixed ``[rank R]`` (``[rank R err]`` for stderr), rank by rank."""
    for r in logs:
        for stream in streams:
            suffix = "" if stream == "stdout" else " err"
            for line in tail_lines(getattr(r, stream), tail):
                yield f"[{r.label}{suffix}] {line}"
