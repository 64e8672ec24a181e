"""A figure against the median of its peers: the one comparison the doctor (a group's bandwidth)
and the running job's slow-node judge (a node's step time) both make. Pure."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def peers_median(values: Sequence[float], index: int) -> float:
    """The median of the values other than ``values[index]``: what one measured thing is
    judged against. Not the median of all: of two super nodes that is their mean, which halves
    the gap of the slow one (a super node at 55% of the other read as 30% below it)."""
    others = [v for i, v in enumerate(values) if i != index]
    return statistics.median(others) if others else values[index]


def below_peers(values: Sequence[float], slow_pct: float) -> list[int]:
    """Indices of the values more than ``slow_pct`` % below the median of their peers (a
    bandwidth, a rate: lower is slower)."""
    if len(values) < 2:
        return []
    return [i for i, v in enumerate(values) if v < peers_median(values, i) * (1 - slow_pct / 100)]


def above_peers(values: Sequence[float], slow_pct: float) -> list[int]:
    """Indices of the values more than ``slow_pct`` % above the median of their peers (a
    duration: higher is slower). A time ``slow_pct`` % above is a rate the same % below."""
    if len(values) < 2:
        return []
    return [i for i, v in enumerate(values) if v > peers_median(values, i) * (1 + slow_pct / 100)]
