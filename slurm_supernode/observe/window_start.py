"""Where a requested profiler window starts: one step for every rank, far enough ahead that
each rank has seen the request before it gets there.

Ranks look for a request on their own clocks (every ``look_every`` seconds), so "your next
step" would start each rank's window at another step, and a rank that profiles while its peers
do not slows them unevenly. From the newest step records on disk (written every ``flush_s``
seconds, so up to that much behind) the furthest rank's step and the median step time give a
step that every rank reaches only after its next look, with a look to spare for a loaded node.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable

from slurm_supernode.observe.records import StepRecord


def window_start(
    newest: Iterable[StepRecord], now: float, *, look_every: float, flush_s: float
) -> int | None:
    """The step after which every rank opens the window; None without step records (then each
    rank starts at its next step, as nothing says where the ranks are)."""
    records = list(newest)
    if not records:
        return None
    furthest = max(records, key=lambda r: r.step)
    step_s = statistics.median(r.seconds for r in records)
    behind = max(now - furthest.t, 0.0) + flush_s  # the records' lag, and steps not yet written
    lead = behind + 2 * look_every
    return furthest.step + math.ceil(lead / max(step_s, 1e-6)) + 1
