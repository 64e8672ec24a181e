"""An attempt's figures over time, for the report's charts, reduced while its files are read.

Per node: step time (the median over its ranks' steps), device utilization (the mean of its
devices at a sample) and power (their sum), each in at most ``points`` equal time slices of the
attempt; the communication share of each profiled window and the plan's beside it. A job of a
thousand ranks that trains for a week writes hundreds of millions of step records: the report
reads each file once, a line at a time, and keeps per slice a count, a time sum and a seeded
sample of at most ``SLICE_SAMPLE`` values, so its memory is set by the slices, not the records.
A slice's point is its mean time and the median of its sample (exact up to that many values).
"""

from __future__ import annotations

import random
import re
import statistics
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from slurm_supernode.observe import records
from slurm_supernode.observe.records import CommShare, DeviceSample, Record, StepRecord

POINTS = 240  # per series: as many as a chart's width shows
SLICE_SAMPLE = 32  # values kept per slice for its median
HEAD_LINES = 16  # lines read from a file's start to find its first record
TAIL_BYTES = 8192  # bytes read from a file's end to find its last record

Points = tuple[tuple[float, float], ...]  # (seconds since the epoch, value), in time order


@dataclass(frozen=True)
class OverTime:
    """What the report plots; ``t0`` is None where the attempt recorded nothing."""

    t0: float | None = None
    step_s: Mapping[str, Points] = field(default_factory=dict)  # node -> step seconds
    util_percent: Mapping[str, Points] = field(default_factory=dict)  # node -> mean of devices
    power_w: Mapping[str, Points] = field(default_factory=dict)  # node -> sum of devices
    comm_percent: Points = ()  # exposed communication share of a step, median over ranks
    plan_percent: Points = ()  # the plan's share held against each window


class Slices:
    """Values in ``points`` equal time slices of ``[t0, t1]``: per slice a count, a time sum and
    a reservoir sample of at most SLICE_SAMPLE values (seeded: the same files, the same chart)."""

    def __init__(self, t0: float, t1: float, points: int, seed: int) -> None:
        self.t0, self.points = t0, points
        self.width = (t1 - t0) / points or 1.0
        self._count: dict[int, int] = {}
        self._t_sum: dict[int, float] = {}
        self._sample: dict[int, array[float]] = {}
        self._rng = random.Random(seed)

    def add(self, t: float, value: float) -> None:
        i = min(max(int((t - self.t0) / self.width), 0), self.points - 1)
        n = self._count.get(i, 0)
        self._count[i] = n + 1
        self._t_sum[i] = self._t_sum.get(i, 0.0) + t
        sample = self._sample.setdefault(i, array("d"))
        if n < SLICE_SAMPLE:
            sample.append(value)
        elif (j := self._rng.randrange(n + 1)) < SLICE_SAMPLE:
            sample[j] = value

    def reduced(self) -> Points:
        return tuple(
            (self._t_sum[i] / self._count[i], statistics.median(self._sample[i]))
            for i in sorted(self._count)
        )


def attempt_over_time(job_dir: Path, attempt: int, points: int = POINTS) -> OverTime:
    """The attempt's figures over time, each file of its observe folder read once."""
    folder = records.attempt_dir(job_dir, attempt)
    try:
        files = sorted(p for p in folder.iterdir() if p.name.endswith(".jsonl"))
    except OSError:
        return OverTime()
    steps = [p for p in files if _STEPS.fullmatch(p.name)]
    samples = [p for p in files if p.name.endswith(_SAMPLES_SUFFIX)]
    comm = [p for p in files if _COMM.fullmatch(p.name)]
    span = _span(steps + samples + comm)
    if span is None:
        return OverTime()
    t0, t1 = span
    step_s: dict[str, Slices] = {}
    for path in steps:
        for r in records.read(path):
            if isinstance(r, StepRecord) and r.seconds > 0:
                _slices(step_s, r.node, t0, t1, points).add(r.t, r.seconds)
    util: dict[str, Slices] = {}
    power: dict[str, Slices] = {}
    for path in samples:
        node = path.name[: -len(_SAMPLES_SUFFIX)]
        for t, utils, watts in _device_instants(records.read(path)):
            if utils:
                _slices(util, node, t0, t1, points).add(t, statistics.mean(utils))
            if watts:
                _slices(power, node, t0, t1, points).add(t, sum(watts))
    measured, plan = _comm_points(r for p in comm for r in records.read(p))
    return OverTime(
        t0=t0,
        step_s=_reduced(step_s),
        util_percent=_reduced(util),
        power_w=_reduced(power),
        comm_percent=measured,
        plan_percent=plan,
    )


_STEPS = re.compile(r"rank-\d+\.steps\.jsonl")
_COMM = re.compile(r"rank-\d+\.comm\.jsonl")
_SAMPLES_SUFFIX = records.samples_path(Path(), 0, "").name  # ".samples.jsonl"


def _span(paths: Iterable[Path]) -> tuple[float, float] | None:
    """The first and last record time over the files (each file's head and tail only)."""
    firsts, lasts = [], []
    for path in paths:
        head = _head(path)
        if head is not None:
            firsts.append(head.t)
        tail = list(records.read_tail(path, TAIL_BYTES))
        if tail:
            lasts.append(max(r.t for r in tail))
    if not firsts:
        return None
    return min(firsts), max(lasts + firsts)


def _head(path: Path) -> Record | None:
    for i, r in enumerate(records.read(path)):
        if i >= HEAD_LINES:
            break
        return r
    return None


def _slices(by_node: dict[str, Slices], node: str, t0: float, t1: float, n: int) -> Slices:
    if node not in by_node:
        by_node[node] = Slices(t0, t1, n, seed=len(by_node))
    return by_node[node]


def _reduced(by_node: Mapping[str, Slices]) -> dict[str, Points]:
    return {node: s.reduced() for node, s in by_node.items()}


def _device_instants(
    lines: Iterable[Record],
) -> Iterable[tuple[float, list[float], list[float]]]:
    """(t, the devices' utilizations, their powers) per sampling instant of one node's file:
    the sampler writes all devices of an instant together."""
    t: float | None = None
    utils: list[float] = []
    watts: list[float] = []
    for r in lines:
        if not isinstance(r, DeviceSample):
            continue
        if r.t != t:
            if t is not None:
                yield t, utils, watts
            t, utils, watts = r.t, [], []
        if r.util_percent is not None:
            utils.append(r.util_percent)
        if r.power_w is not None:
            watts.append(r.power_w)
    if t is not None:
        yield t, utils, watts


def _comm_points(lines: Iterable[Record]) -> tuple[Points, Points]:
    """(measured share, plan share) in percent per profiled window: the median over the ranks
    of windows that closed within the same ten seconds (ranks profile the same steps)."""
    measured: dict[float, list[float]] = {}
    plan: dict[float, list[float]] = {}
    for c in lines:
        if not isinstance(c, CommShare):
            continue
        step = c.compute_s + c.exposed_comm_s
        if step > 0:
            t = round(c.t, -1)
            measured.setdefault(t, []).append(c.exposed_comm_s / step * 100)
            if c.plan_share is not None:
                plan.setdefault(t, []).append(c.plan_share * 100)
    return _medians(measured), _medians(plan)


def _medians(by_t: Mapping[float, Sequence[float]]) -> Points:
    return tuple((t, statistics.median(v)) for t, v in sorted(by_t.items()))
