"""The observe record files: per attempt, append-only, readable while written."""

from __future__ import annotations

from pathlib import Path

from slurm_supernode.observe import records as r


def test_records_round_trip_per_attempt_and_skip_a_torn_line(tmp_path: Path) -> None:
    node = r.NodeSample(t=1.0, node="n1", cpu_percent=3.5, nic_rx_bytes={"eth0": 5})
    dev = r.DeviceSample(t=1.0, node="n1", index=0, util_percent=50.0, power_w=300.5)
    path = r.samples_path(tmp_path, 2, "n1")
    r.append(path, [node, dev])
    with path.open("a") as f:
        f.write('{"kind":"node","t":')  # a writer caught mid-line
    step = r.StepRecord(t=2.0, rank=3, node="n1", step=7, seconds=0.25, tokens=4096)
    r.append(r.steps_path(tmp_path, 2, 3), [step])
    r.append(r.steps_path(tmp_path, 0, 3), [step])

    assert list(r.read(path)) == [node, dev]
    assert list(r.read(r.steps_path(tmp_path, 2, 3))) == [step]
    assert r.attempts(tmp_path) == [0, 2]
    assert list(r.read(tmp_path / "missing.jsonl")) == []


def test_unknown_or_wrong_shaped_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('[1,2]\n{"kind":"device","t":1}\n{"kind":"gpu"}\nnot json\n')
    assert list(r.read(path)) == []


def test_slow_marks_and_comm_shares_round_trip(tmp_path: Path) -> None:
    mark = r.SlowNodeMark(t=3.0, node="n2", supernode="sn0", ratio=1.8, evidence="step time")
    share = r.CommShare(
        t=4.0,
        rank=1,
        node="n1",
        steps=5,
        compute_s=1.0,
        exposed_comm_s=0.3,
        overlapped_comm_s=0.1,
        by_group={"dp": 0.4},
        plan_share=0.18,
    )
    r.append(r.slow_path(tmp_path, 0), [mark])
    r.append(r.comm_path(tmp_path, 0, 1), [share])
    assert list(r.read(r.slow_path(tmp_path, 0))) == [mark]
    assert list(r.read(r.comm_path(tmp_path, 0, 1))) == [share]
