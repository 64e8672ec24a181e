"""Is a slow group slow, or was it the noise? The doctor's rule for failing a group.

A shared or busy fabric gives each measurement its own figure: one run named "a slow pair",
the next "n3 slow in both pairings", from differences its own repeats would have shown to be
noise. So the judged size is measured several times (``BenchConfig.repeats``) and a group
below its peers is a failure only when it is below them in *every* repeat (each figure against
the median of the other groups' figures of the same repeat) *and* its gap is larger than how
much a typical group's figures move between repeats. Both are relative to the peers of each
repeat: a busy machine slows every group of one repeat alike, which says nothing about one
group (measured under a loaded test run, the absolute spread of the repeats was larger than
the median itself, and a node at a seventh of the others' speed passed as noise). Peers, not
all groups: of two super nodes the median of both is their mean, which halved the gap of one
at 55% of the other's speed. Anything else below its peers is a warning at most. Pure.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from slurm_supernode.bench.model import GroupResult
from slurm_supernode.doctor.verdicts import peers_median


@dataclass(frozen=True)
class Noise:
    """How the slow groups of one scope compare with the measured noise."""

    beyond: tuple[GroupResult, ...]  # slow in every repeat, by more than the spread: fail
    within: tuple[GroupResult, ...]  # slow on average only, or not repeated: warn
    repeats: int  # measurements per group (1: the noise is unknown)
    spread: float | None  # median over groups of (max - min) busbw of their repeats, GB/s
    # median over groups of how far a group's worst repeat is below its best, each figure
    # taken as a fraction of its peers' median in that repeat
    relative_spread: float | None = None
    # each group's figures as fractions of its peers' median, per repeat (by scope, group)
    ratios: dict[tuple[str, int], tuple[float, ...]] = field(default_factory=dict)

    def why(self, g: GroupResult, slow_pct: float) -> str:
        """Why a group of ``within`` is not a failure, in words."""
        mine = self.ratios.get((g.scope, g.group))
        if self.repeats < 2 or mine is None:
            return "measured once: cannot be told from noise (not a failure)"
        below = sum(1 for r in mine if r < 1 - slow_pct / 100)
        gap = 1 - statistics.median(mine)
        return (
            f"slow in {below} of {self.repeats} repeats, {100 * gap:.0f}% below its peers "
            f"against {100 * (self.relative_spread or 0):.0f}% that a typical group's worst "
            "repeat is below its best: within the measured noise"
        )


def peer_ratios(groups: Sequence[GroupResult], repeats: int) -> list[tuple[float, ...]]:
    """Each group's figure of each repeat as a fraction of the other groups' median in that
    repeat (1.0 where that median is 0)."""
    out = []
    for k, g in enumerate(groups):
        row = []
        for i in range(repeats):
            center = peers_median([h.samples[i] for h in groups], k)
            row.append(g.samples[i] / center if center > 0 else 1.0)
        out.append(tuple(row))
    return out


def _moves(ratios: Sequence[float]) -> float:
    """How far the worst of a group's figures is below its best, as a fraction of the best."""
    top = max(ratios)
    return 1 - min(ratios) / top if top > 0 else 0.0


def split_by_noise(
    groups: Sequence[GroupResult], slow: Sequence[GroupResult], slow_pct: float
) -> Noise:
    """Sort the ``slow`` groups (below their peers by ``slow_pct``) of one scope's ``groups``
    into failures and noise."""
    counts = {len(g.samples) for g in groups}
    repeats = counts.pop() if len(counts) == 1 else 1
    if repeats < 2 or len(groups) < 2:
        return Noise((), tuple(slow), 1, None)
    spread = statistics.median(max(g.samples) - min(g.samples) for g in groups)
    rows = zip(groups, peer_ratios(groups, repeats), strict=True)
    ratios = {(g.scope, g.group): r for g, r in rows}
    moves = statistics.median(_moves(r) for r in ratios.values())
    beyond: list[GroupResult] = []
    within: list[GroupResult] = []
    for g in slow:
        mine = ratios[(g.scope, g.group)]
        every = all(r < 1 - slow_pct / 100 for r in mine)
        (beyond if every and 1 - statistics.median(mine) > moves else within).append(g)
    return Noise(tuple(beyond), tuple(within), repeats, spread, moves, ratios)
