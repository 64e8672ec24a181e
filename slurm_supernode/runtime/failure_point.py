"""Which failure an attempt had, as a fact that does not depend on timing: its failure class
and the program point that failed, never the text of whichever rank or node reported first.

The "same failure twice" rule (classify.decide) stops a chain early when an attempt fails as
the one before did. Identical failing tasks differ only in which rank's report lands first
(``rank 3: ValueError ... on n1`` or ``rank 0: ... on n0``), so that text cannot decide it.
A rank that raises records where (``program_point``: the innermost frame of its traceback,
``file:line in function``); the attempt's failure is the exception type and point of its
earliest failing rank, which identical tasks share whichever rank came first. Without a
traceback (a script's own non-zero exit, a rank killed by a signal) it is what every failing
rank shares: the exit codes, or the signal, as a set, without the node or rank that showed it.
"""

from __future__ import annotations

import re
import traceback
from types import TracebackType

from slurm_supernode.chain.ledger import Attempt

_RANK_PREFIX = re.compile(r"^rank [^:]*: ")


def program_point(tb: TracebackType | None) -> str | None:
    """``/code/train.py:41 in step``: the innermost frame of a traceback (None: none)."""
    frames = traceback.extract_tb(tb) if tb is not None else []
    if not frames:
        return None
    last = frames[-1]
    return f"{last.filename}:{last.lineno} in {last.name}"


def _kind(error_text: str) -> str:
    """``rank 3: ValueError: bad shape (3, 4)`` -> ``ValueError``; a death by a signal keeps
    its words without the rank (``killed by signal 9 (SIGKILL)``)."""
    text = _RANK_PREFIX.sub("", error_text)
    head, sep, _ = text.partition(": ")
    return head if sep and head.replace(".", "").isidentifier() else text


def failure_point(attempt: Attempt) -> str | None:
    """The attempt's failure as ``Type@point`` (its earliest failing rank's), else the set of
    non-zero exit codes of its nodes (``exit 1``); None when nothing failed."""
    if attempt.rank_errors:
        first = min(attempt.rank_errors, key=lambda n: attempt.rank_error_times.get(n, 0.0))
        kind = _kind(attempt.rank_errors[first])
        point = attempt.rank_points.get(first)
        return f"{kind}@{point}" if point else kind
    codes = sorted({c for c in attempt.node_exits.values() if c != 0})
    return "exit " + ",".join(map(str, codes)) if codes else None
