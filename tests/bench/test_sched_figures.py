"""The busy-cluster figures of the scheduling benchmark (perf/sched_figures.py) and the time
limits of its job mix (perf/sched_mix.py), on values worked out by hand."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "perf"))
figures = pytest.importorskip("sched_figures")
mix = pytest.importorskip("sched_mix")


def test_percentile_is_the_nearest_rank():
    values = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6]  # 1..10
    assert figures.percentile(values, 50) == 5  # ceil(5) = 5th
    assert figures.percentile(values, 95) == 10  # ceil(9.5) = 10th
    assert figures.percentile(values, 10) == 1
    assert figures.percentile(values, 11) == 2  # ceil(1.1) = 2nd
    assert figures.percentile(range(1, 201), 99) == 198  # ceil(198) = 198th
    assert figures.percentile([7.5], 99) == 7.5 and figures.percentile([], 50) is None


def test_bounded_slowdown():
    assert figures.bounded_slowdown(0, 40) == 1.0
    assert figures.bounded_slowdown(60, 40) == 2.5  # (60 + 40) / 40
    assert figures.bounded_slowdown(16, 4) == 2.0  # (16 + 4) / max(4, 10)
    assert figures.bounded_slowdown(2, 4) == 1.0  # 0.6, floored at 1


def test_size_classes():
    assert [figures.size_class(n) for n in (1, 2, 16, 17, 128)] == [
        "1 tray", "2-16 trays", "2-16 trays", ">16 trays", ">16 trays"
    ]  # fmt: skip


def row(submit, start, end, gpus=4, nodes=1, alloc=None, dur=10.0):
    started = start is not None
    return {"submit": submit, "start": start, "end": end, "started": started, "gpus": gpus,
            "nodes_asked": nodes, "nodes_alloc": (alloc or nodes) if started else 0,
            "duration_s": dur}  # fmt: skip


def test_window_leaves_out_warmup_and_drain():
    rows = [row(100, 100, 110), row(160, 170, 180), row(130, 131, 141)]
    assert figures.window(rows, 30) == (130, 160)
    assert figures.window(rows, 60) is None  # nothing left after the warmup


def test_throughput_counts_only_the_work_inside_the_window():
    w0, w1 = 100.0, 200.0
    rows = [
        row(50, 60, 150, gpus=8, nodes=2),  # 50 s inside x 8 GPUs = 400
        row(120, 150, 260, gpus=2, nodes=1, alloc=16),  # 50 s x 2 asked; 50 x 64 allocated
        row(210, 220, 230, gpus=64, nodes=16),  # after the window: nothing
        row(130, None, 240, gpus=4),  # never started: nothing
    ]
    got = figures.throughput(rows, w0, w1, 4)
    assert got == {"gpu_h_per_h": (400 + 100) / 100, "alloc_gpu_h_per_h": (400 + 3200) / 100}


def test_waits_per_class_with_censored_jobs():
    rows = [
        row(100, 102, 112),  # 1 tray, wait 2
        row(101, 111, 121),  # 1 tray, wait 10
        row(90, 95, 105),  # before the window: left out
        row(105, 125, 165, gpus=32, nodes=8, dur=40),  # 2-16, wait 20, bsld (20+40)/40 = 1.5
        row(110, None, 200, gpus=256, nodes=64, dur=5),  # >16, cut: wait >= 90, bsld 9.5
    ]
    ws = figures.waits(rows, 100, 150)
    t = figures.wait_table(ws)
    assert t["1 tray"] == {"jobs": 2, "censored": 0, "p50": 2, "p95": 10, "p99": 10,
                           "bsld_mean": round((1.2 + 2.0) / 2, 2)}  # fmt: skip
    assert (t["2-16 trays"]["p50"], t["2-16 trays"]["bsld_mean"]) == (20, 1.5)
    assert t[">16 trays"] == {"jobs": 1, "censored": 1, "p50": 90, "p95": 90, "p99": 90,
                              "bsld_mean": 9.5}  # fmt: skip
    assert (t["all"]["jobs"], t["all"]["censored"], t["all"]["p50"]) == (4, 1, 10)


def test_user_limits_are_whole_hours_a_few_times_the_run_time():
    # replay seconds x 60 = trace seconds; limit = the next whole-hour grid value >= factor x run
    assert mix.user_limit_min(4.0, 2.0) == 1  # 8 trace minutes -> 1 h
    assert mix.user_limit_min(30.0, 2.0) == 1  # 60 trace minutes -> exactly 1 h
    assert mix.user_limit_min(31.0, 2.0) == 2  # 62 min -> 2 h
    assert mix.user_limit_min(90.0, 5.0) == 8  # 7.5 h -> 8 h
    assert mix.user_limit_min(90.0, 40.0) == 48  # capped at the largest limit


def test_stream_keeps_its_load_and_every_job_fits_its_limit():
    jobs = mix.make_stream(5, 144, 1.5, 300)
    assert jobs == mix.make_stream(5, 144, 1.5, 300)  # seeded
    assert max(j.submit_s for j in jobs) < 300 <= max(j.submit_s for j in jobs) + 300
    assert all(j.limit_min * 60 >= 2 * j.duration_s for j in jobs)
    half = mix.make_stream(5, 144, 0.75, 300)
    assert len(half) < len(jobs)  # half the load, fewer arrivals over the same span
