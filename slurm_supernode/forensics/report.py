"""What `snrun status` adds to each attempt: the cause in words and where the evidence is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from slurm_supernode.forensics.logs import attempt_dir, attempts_with_logs, first_error


def attempt_evidence(job_dir: Path, attempt: dict[str, Any]) -> dict[str, Any]:
    """The attempt's record plus ``error`` (the first failing rank's exception: ranks in the
    order of the ledger's ``rank_failures``, words from torchelastic's error files), ``logs``
    (its log folder) and ``stacks`` (stack dumps taken before a hung or timed-out attempt was
    stopped)."""
    out = dict(attempt)
    failures = out.pop("rank_failures", None) or ()
    n = attempt["attempt"]
    folder = attempt_dir(job_dir, n)
    out["logs"] = str(folder) if folder.is_dir() else None
    # a stopped job's ranks die of the signal (SignalException): that is no cause to show
    failed = attempt.get("cause") not in ("success", "cancelled", "preemption", "time_limit")
    out["error"] = first_error(job_dir, n, failures) if failed else None
    stacks = folder / "stacks"
    out["stacks"] = str(stacks) if stacks.is_dir() and any(stacks.iterdir()) else None
    return out


def cause_in_words(err: dict[str, Any]) -> str:
    """``rank 3 on n1: RuntimeError: boom (+1 more ranks)`` from ``first_error``."""
    who = f"rank {err['rank']}" if err.get("rank") is not None else err.get("node", "?")
    text = f"{err['type']}: {err['message']}" if err.get("type") else err["message"]
    more = f" (+{err['failed_ranks'] - 1} more ranks)" if err.get("failed_ranks", 1) > 1 else ""
    return f"{who} on {err['node']}: {text}{more}"


def last_failure(
    job_dir: Path, failures: Mapping[int, Sequence[Mapping[str, Any]]] | None = None
) -> str | None:
    """The failing rank's exception of the job's latest attempt that has one, in words with
    its log (for the one-line error of a failed doctor or bench job); None if none failed so.
    ``failures``: attempt -> its ``rank_failures`` from the ledger (``first_error``)."""
    for n in sorted(attempts_with_logs(job_dir), reverse=True):
        err = first_error(job_dir, n, (failures or {}).get(n, ()))
        if err:
            return f"{cause_in_words(err)} (log {err['log']})"
    return None


def evidence_lines(a: dict[str, Any]) -> list[str]:
    """Indented lines under the attempt's row of the status table."""
    lines = []
    err = a.get("error")
    if err:
        lines.append(f"      cause: {cause_in_words(err)}")
        lines.append(f"      log  : {err['log']}")
    if a.get("stacks"):
        lines.append(f"      stacks: {a['stacks']} (py-spy dump of every rank before the stop)")
    return lines
