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
at 55% of the other's speed. Anything else below its peers is a warning at most.

Too noisy to judge: within one scope, back-to-back repeats cannot show noise that lasts
through all of them. On a busy shared host (CPU burners, load 22-30 on 2 CPUs,
perf/bench_doctor_noise.py) 3 of 3 clean runs failed: some group stayed 30-70% below its peers
through three repeats by the load alone, while in every run some scope's typical group moved
48-95% between repeats. So a run in which the typical group of any scope moved more than
``NOISY_RUN`` (its worst repeat less than half its best, relative to its peers) is too noisy
to judge: nothing fails, and every group below its peers is a warning that names it and says
the run was too noisy. Not even a group far below its peers in every repeat fails then: under
that load a clean cross group stayed at 11-12% of its peers through three repeats, as low as
an injected slow node. A steady run keeps the rule above (a node at 15% of its peers under
+-30% jitter per group is named, a failure). Pure.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from slurm_supernode.bench.model import GroupResult
from slurm_supernode.doctor.verdicts import peers_median

# A run where the typical group of some scope moved more than this between repeats (worst
# repeat below half the best, relative to its peers) cannot be judged: the host or fabric is busy.
NOISY_RUN = 0.5
COMM_SCOPES = ("node", "pairs", "pairs_shift", "supernode", "inter")


@dataclass(frozen=True)
class RunNoise:
    """The noisiest scope of a run: too noisy to judge anything when above ``NOISY_RUN``."""

    scope: str
    moves: float  # the typical group's relative movement between repeats in that scope

    def why(self) -> str:
        return (
            f"too noisy to judge: in {self.scope} a typical group's figures moved "
            f"{100 * self.moves:.0f}% between back-to-back repeats (more than "
            f"{100 * NOISY_RUN:.0f}%: the machine or fabric was busy); rerun when it is quiet"
        )


def run_noise(results: Sequence[GroupResult]) -> RunNoise | None:
    """The run's noise when it is too noisy to judge (``NOISY_RUN``), else None."""
    worst: RunNoise | None = None
    for scope in COMM_SCOPES:
        groups = [g for g in results if g.scope == scope]
        if not groups:
            continue
        top = max(g.size for g in groups)
        groups = [g for g in groups if g.size == top]
        counts = {len(g.samples) for g in groups}
        if len(counts) != 1 or counts.pop() < 2 or len(groups) < 2:
            continue
        repeats = len(groups[0].samples)
        moves = statistics.median(_moves(r) for r in peer_ratios(groups, repeats))
        if worst is None or moves > worst.moves:
            worst = RunNoise(scope, moves)
    return worst if worst is not None and worst.moves > NOISY_RUN else None


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
    noisy_run: RunNoise | None = None  # the run was too noisy to judge: nothing fails

    def why(self, g: GroupResult, slow_pct: float) -> str:
        """Why a group of ``within`` is not a failure, in words."""
        mine = self.ratios.get((g.scope, g.group))
        if self.repeats < 2 or mine is None:
            return "measured once: cannot be told from noise (not a failure)"
        below = sum(1 for r in mine if r < 1 - slow_pct / 100)
        gap = 1 - statistics.median(mine)
        if self.noisy_run is not None:
            return (f"slow in {below} of {self.repeats} repeats, {100 * gap:.0f}% below its peers;"
                    f" {self.noisy_run.why()}")  # fmt: skip
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
    groups: Sequence[GroupResult],
    slow: Sequence[GroupResult],
    slow_pct: float,
    noisy_run: RunNoise | None = None,
) -> Noise:
    """Sort the ``slow`` groups (below their peers by ``slow_pct``) of one scope's ``groups``
    into failures and noise; in a run too noisy to judge (``run_noise``) none fails."""
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
        sure = every and 1 - statistics.median(mine) > moves and noisy_run is None
        (beyond if sure else within).append(g)
    return Noise(tuple(beyond), tuple(within), repeats, spread, moves, ratios, noisy_run)
