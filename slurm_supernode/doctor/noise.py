"""Is a slow group slow, or was it the noise? The doctor's rule for failing a group.

A shared or busy fabric gives each measurement its own figure: one run named "a slow pair",
the next "n3 slow in both pairings", from differences its own repeats would have shown to be
noise. So the judged size is measured several times (``BenchConfig.repeats``) and a group
below the median is a failure only when it is below in *every* repeat (each against that
repeat's median) *and* its gap to the median is larger than the spread of a typical group's
repeats. Anything else below the median is a warning at most. Pure.
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

    def why(self, g: GroupResult, center: float, slow_pct: float) -> str:
        """Why a group of ``within`` is not a failure, in words."""
        if self.repeats < 2 or self.spread is None:
            return "measured once: cannot be told from noise (not a failure)"
        low = [c * (1 - slow_pct / 100) for c in self.centers]
        below = sum(1 for s, limit in zip(g.samples, low, strict=True) if s < limit)
        return (
            f"slow in {below} of {self.repeats} repeats, {center - g.busbw:.2f} GB/s below the "
            f"median against a spread of {self.spread:.2f} GB/s: within the measured noise"
        )


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
    median = statistics.median(g.busbw for g in groups)
    beyond: list[GroupResult] = []
    within: list[GroupResult] = []
    for g in slow:
        every = all(g.samples[i] < centers[i] * (1 - slow_pct / 100) for i in range(repeats))
        (beyond if every and median - g.busbw > spread else within).append(g)
    return Noise(tuple(beyond), tuple(within), repeats, spread, centers)
