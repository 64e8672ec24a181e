"""observe/over_time: the report's figures over time, read a line at a time into equal time
slices: exact where a slice holds few values, a bounded sample where it holds many, torn lines
skipped, nothing recorded -> nothing to plot."""

from __future__ import annotations

import random
import statistics

from slurm_supernode.observe import over_time, records
from slurm_supernode.observe.over_time import SLICE_SAMPLE, Slices, attempt_over_time
from slurm_supernode.observe.records import StepRecord
from tests.observe.attempt_fixture import NODES, SLOW, T0, write_attempt


def test_the_fixture_attempt_per_node(tmp_path):
    write_attempt(tmp_path)
    over = attempt_over_time(tmp_path, 0)
    assert over.t0 == T0  # the first sample
    assert set(over.step_s) == set(NODES) == set(over.util_percent) == set(over.power_w)
    for node in NODES:
        want = 0.8 if node == SLOW else 0.5
        assert {v for _, v in over.step_s[node]} == {want}
        assert {v for _, v in over.util_percent[node]} == {55.0 if node == SLOW else 97.0}
        assert {v for _, v in over.power_w[node]} == {400.0 + 410 + 420 + 430}  # summed
        times = [t for t, _ in over.step_s[node]]
        assert times == sorted(times) and len(times) <= over_time.POINTS
    assert [round(v, 6) for _, v in over.comm_percent] == [30.0]  # 0.15 of 0.5 s
    assert [round(v, 6) for _, v in over.plan_percent] == [18.0]


def test_many_records_keep_at_most_the_slices_and_a_sample_each(tmp_path):
    rng = random.Random(7)
    n = 50_000
    values = [rng.lognormvariate(0, 0.3) for _ in range(n)]
    records.append(
        records.steps_path(tmp_path, 0, 0),
        [
            StepRecord(t=T0 + i, rank=0, node="n0", step=i + 1, seconds=v)
            for i, v in enumerate(values)
        ],
    )
    over = attempt_over_time(tmp_path, 0, points=10)
    pts = over.step_s["n0"]
    assert len(pts) == 10
    for k, (t, v) in enumerate(pts):
        chunk = values[k * 5000 : (k + 1) * 5000]
        assert abs(t - (T0 + k * 5000 + 2499.5)) < 1.0  # the slice's mean time
        assert abs(v - statistics.median(chunk)) < 0.15  # a sample's median, near the true one
    s = Slices(0.0, 1.0, 1, seed=0)
    for i in range(10_000):
        s.add(0.5, float(i))
    assert len(s._sample[0]) == SLICE_SAMPLE


def test_torn_lines_and_empty_attempts(tmp_path):
    assert attempt_over_time(tmp_path, 3).t0 is None
    path = records.steps_path(tmp_path, 0, 0)
    records.append(path, [StepRecord(t=T0, rank=0, node="n0", step=1, seconds=2.0)])
    with open(path, "ab") as fh:
        fh.write(b'{"t": 1780000001.0, "rank": 0, "no\xff')  # a writer killed mid-line
    over = attempt_over_time(tmp_path, 0)
    assert over.step_s == {"n0": ((T0, 2.0),)} and over.util_percent == {}
