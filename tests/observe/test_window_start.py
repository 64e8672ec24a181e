"""observe/window_start: the requested window's first step is ahead of every rank by the
records' lag and two looks, at the median step time; nothing known, nothing chosen."""

from __future__ import annotations

from slurm_supernode.observe.records import StepRecord
from slurm_supernode.observe.window_start import window_start


def rec(rank: int, step: int, t: float, seconds: float) -> StepRecord:
    return StepRecord(t=t, rank=rank, node="n", step=step, seconds=seconds)


def test_ahead_of_the_furthest_rank():
    records = [rec(0, 100, 50.0, 0.5), rec(1, 98, 50.0, 0.5), rec(2, 101, 49.0, 0.5)]
    # furthest: step 101, written 1 s ago; lead = 1 + 2 (flush) + 2 x 5 (looks) = 13 s = 26 steps
    assert window_start(records, 50.0, look_every=5.0, flush_s=2.0) == 101 + 26 + 1


def test_step_time_is_the_median_a_slow_first_step_does_not_move():
    records = [rec(0, 1, 10.0, 30.0)] + [rec(0, s, 10.0, 1.0) for s in range(2, 6)]
    assert window_start(records, 10.0, look_every=5.0, flush_s=0.0) == 5 + 10 + 1


def test_fast_steps_and_no_records():
    assert window_start([], 0.0, look_every=5.0, flush_s=2.0) is None
    assert window_start([rec(0, 7, 0.0, 0.0)], 0.0, look_every=1.0, flush_s=0.0) > 7
