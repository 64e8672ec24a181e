"""A profiler trace reduced to compute, exposed and overlapped communication."""

from __future__ import annotations

import pytest

from slurm_supernode.observe.trace_reduce import intersect, reduce_trace, union


def _x(name, ts, dur, tid=1, cat="cpu_op", **args):
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "tid": tid, "cat": cat, "args": args}


def test_interval_arithmetic():
    assert union([(5, 7), (0, 2), (1, 3), (7, 8)]) == [(0, 3), (5, 8)]
    assert intersect([(0, 3), (5, 8)], [(2, 6)]) == [(2, 3), (5, 6)]


def test_gloo_cpu_trace():
    # main thread: compute 0-40 (nested ops count once), waits 40-100, compute 100-120;
    # gloo thread: all_reduce 30-100 (10 us under compute, 60 exposed)
    events = [
        _x("PyTorch Profiler (0)", 0, 150, tid=0, cat="Trace"),
        _x("aten::linear", 0, 40),
        _x("aten::addmm", 5, 30),
        _x("c10d::allreduce_", 38, 1),
        _x("Optimizer.step#SGD.step", 100, 20, cat="user_annotation"),
        _x("gloo:all_reduce", 30, 70, tid=9, cat="user_annotation"),
    ]
    b = reduce_trace({"traceEvents": events})
    assert b.window_s == pytest.approx(150e-6)
    assert b.compute_s == pytest.approx(60e-6)
    assert b.overlapped_comm_s == pytest.approx(10e-6)
    assert b.exposed_comm_s == pytest.approx(60e-6)
    assert b.by_group == {"gloo": pytest.approx(70e-6)}
    assert b.comm_share == pytest.approx(60 / 120)


def test_gpu_kernels_and_groups():
    trace = {
        "distributedInfo": {"pg_config": [{"pg_name": "1", "pg_desc": "tp", "ranks": [0, 1]}]},
        "traceEvents": [
            _x("sm90_gemm", 0, 100, cat="kernel"),
            _x(
                "ncclDevKernel_AllReduce_Sum_bf16",
                80,
                40,
                cat="kernel",
                **{"Process Group Name": "1"},
            ),
            _x(
                "ncclDevKernel_AllGather",
                130,
                10,
                cat="kernel",
                **{"Process Group Description": "default_pg"},
            ),
            _x("aten::mm", 0, 500),  # CPU ops do not count where kernels exist
        ],
    }
    b = reduce_trace(trace, {"tp": "tp", "default_pg": "world"})
    assert b.compute_s == pytest.approx(100e-6)
    assert b.overlapped_comm_s == pytest.approx(20e-6)
    assert b.exposed_comm_s == pytest.approx(30e-6)
    assert b.by_group == {"tp": pytest.approx(40e-6), "world": pytest.approx(10e-6)}


def test_empty_trace():
    assert reduce_trace({}).compute_s == 0.0
