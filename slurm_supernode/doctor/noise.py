"""Is a slow group slow, or was it the noise? The doctor's rule for failing a group.

A shared or busy fabric gives each measurement its own figure: one run named "a slow pair",
the next "n3 slow in both pairings", from differences its own repeats would have shown to be
noise. So the judged size is measured several times (``BenchConfig.repeats``) and a group
below the median is a failure only when it is below in *every* repeat (each against that
repeat's median) *and* its gap to the median is larger than how much a typical group's
figures move between repeats. Both are taken relative to each repeat's median: a busy machine
slows every group of one repeat alike, which says nothing about one group (measured under a
loaded test run, the absolute spread of the repeats was larger than the median itself, and a
node at a seventh of the others' speed passed as noise). Anything else below the median is a
warning at most. Pure.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from slurm_supernode.bench.model import GroupResult


@dataclass(frozen=True)
class Noise:
    """How the slow groups of one scope compare with the measured noise."""

    beyond: tuple[GroupResult, ...]  # slow in every repeat, by more than the spread: fail
    within: tuple[GroupResult, ...]  # slow on average only, or not repeated: warn
    repeats: int  # measurements per group (1: the noise is unknown)
    spread: float | None  # median over groups of (max - min) busbw of their repeats, GB/s
    centers: tuple[float, ...] = ()  # the median busbw of each repeat
    # median over groups of (max - min) of their figures as fractions of each repeat's median
    relative_spread: float | None = None

    def why(self, g: GroupResult, center: float, slow_pct: float) -> str:
        """Why a group of ``within`` is not a failure, in words."""
        if self.repeats < 2 or self.spread is None:
            return "measured once: cannot be told from noise (not a failure)"
        low = [c * (1 - slow_pct / 100) for c in self.centers]
        below = sum(1 for s, limit in zip(g.samples, low, strict=True) if s < limit)
        gap = 1 - statistics.median(_relative(g, self.centers))
        return (
            f"slow in {below} of {self.repeats} repeats, {100 * gap:.0f}% below the median "
            f"against {100 * (self.relative_spread or 0):.0f}% that a typical group moves "
            "between repeats: within the measured noise"
        )


def _relative(g: GroupResult, centers: Sequence[float]) -> list[float]:
    """``g``'s figures as fractions of each repeat's median (1.0 where a median is 0)."""
    return [s / c if c > 0 else 1.0 for s, c in zip(g.samples, centers, strict=True)]


def split_by_noise(
    groups: Sequence[GroupResult], slow: Sequence[GroupResult], slow_pct: float
) -> Noise:
    """Sort the ``slow`` groups (below the median by ``slow_pct``) of one scope's ``groups``
    into failures and noise."""
    counts = {len(g.samples) for g in groups}
    repeats = counts.pop() if len(counts) == 1 else 1
    if repeats < 2:
        return Noise((), tuple(slow), 1, None)
    centers = tuple(statistics.median(g.samples[i] for g in groups) for i in range(repeats))
    spread = statistics.median(max(g.samples) - min(g.samples) for g in groups)
    relative = {id(g): _relative(g, centers) for g in groups}
    moves = statistics.median(max(r) - min(r) for r in relative.values())
    beyond: list[GroupResult] = []
    within: list[GroupResult] = []
    for g in slow:
        mine = relative.get(id(g)) or _relative(g, centers)
        every = all(r < 1 - slow_pct / 100 for r in mine)
        (beyond if every and 1 - statistics.median(mine) > moves else within).append(g)
    return Noise(tuple(beyond), tuple(within), repeats, spread, centers, moves)
