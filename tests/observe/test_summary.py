"""The reduction of an attempt's records to its summary (observe/summary.py)."""

from __future__ import annotations

import pytest

from slurm_supernode.observe.attempt_files import load_attempt
from slurm_supernode.observe.records import NodeSample, StepRecord
from slurm_supernode.observe.records import append as records_append
from slurm_supernode.observe.summary import AttemptRecords, JobContext, rank_step, summarize
from tests.observe.attempt_fixture import GIB, NODES, SLOW, SUPERNODE, T0, write_attempt

NOW = T0 + 65


def ctx(**kw) -> JobContext:
    base = dict(job_id=4242, user="alice", attempt=0, nodes=NODES, supernode_of=SUPERNODE)
    return JobContext(**(base | kw))


def test_every_node_with_its_newest_figures(tmp_path):
    write_attempt(tmp_path)
    s = summarize(load_attempt(tmp_path, 0), ctx(), NOW)
    assert [n.node for n in s.nodes] == list(NODES)
    n = s.node("sn0-n0")
    assert n.supernode == "sn0" and n.sampled_t == T0 + 60 and n.age_s == pytest.approx(5)
    assert not n.stale
    assert n.cpu_percent == 41.0 and n.mem_used_bytes == 46 * GIB
    assert [d.index for d in n.devices] == [0, 1, 2, 3]
    assert n.devices[3].power_w == 430.0 and n.devices[3].temperature_c == 63.0
    # 10 MB more every 10 s: 1 MB/s received on ib0; 2 MB/s sent
    assert n.nics["ib0"].rx_bytes_per_s == pytest.approx(1e6)
    assert n.nics["ib0"].tx_bytes_per_s == pytest.approx(2e6)
    assert n.nics["eth0"].rx_bytes_per_s == pytest.approx(100)


def test_step_times_per_rank_node_and_job(tmp_path):
    write_attempt(tmp_path)
    s = summarize(load_attempt(tmp_path, 0), ctx(), NOW)
    assert s.node("sn0-n0").step_s == pytest.approx(0.5)
    assert s.node(SLOW).step_s == pytest.approx(0.8)
    assert [r.rank for r in s.node(SLOW).ranks] == [6, 7]
    assert s.step_s == pytest.approx(0.5)  # the median of 8 ranks, 6 of them at 0.5 s
    assert s.last_step == 40
    # 4096 tokens per step and rank: 6 ranks at 0.5 s and 2 at 0.8 s
    assert s.tokens_per_s == pytest.approx(6 * 4096 / 0.5 + 2 * 4096 / 0.8)
    assert s.loss == pytest.approx(2.6)


def test_communication_share_against_the_plan(tmp_path):
    write_attempt(tmp_path)
    s = summarize(load_attempt(tmp_path, 0), ctx(), NOW)
    assert s.comm is not None
    assert s.comm.share == pytest.approx(0.3)  # 0.15 exposed of 0.5 s
    assert s.comm.overlapped_share == pytest.approx(0.1)
    assert s.comm.plan_share == pytest.approx(0.18)
    assert s.comm.by_group == pytest.approx({"dp": 0.2, "tp": 0.2})
    assert s.comm.ranks == 8 and s.node("sn1-n0").comm.ranks == 2


def test_the_slow_mark_with_its_evidence(tmp_path):
    write_attempt(tmp_path)
    s = summarize(load_attempt(tmp_path, 0), ctx(), NOW)
    assert [m.node for m in s.slow] == [SLOW]
    assert s.node(SLOW).slow.ratio == 1.6 and "0.80 s" in s.node(SLOW).slow.evidence
    assert s.node("sn0-n0").slow is None


def test_unknown_is_said_not_zero(tmp_path):
    write_attempt(tmp_path, steps=False, comm=False, devices=False)
    s = summarize(load_attempt(tmp_path, 0), ctx(), NOW)
    assert s.step_s is None and s.last_step is None and s.tokens_per_s is None
    assert s.comm is None and s.checkpoint_age_s is None
    assert any(m.startswith("progress unknown") for m in s.missing)
    assert any(m.startswith("communication share unknown") for m in s.missing)
    assert any(m.startswith("checkpoint age unknown") for m in s.missing)
    n = s.node("sn0-n0")
    assert n.step_s is None and n.devices == []
    assert any("no device figures" in m for m in n.missing)


def test_a_node_without_samples_and_a_stale_one(tmp_path):
    write_attempt(tmp_path)
    s = summarize(load_attempt(tmp_path, 0), ctx(nodes=(*NODES, "sn2-n0")), T0 + 200)
    assert s.node("sn2-n0").sampled_t is None
    assert any("no samples" in m for m in s.node("sn2-n0").missing)
    assert s.node("sn0-n0").stale  # 140 s after its newest sample, sampled every 10 s
    assert any("140 s old" in m for m in s.node("sn0-n0").missing)


def test_nic_counter_reset_and_a_single_sample():
    a = NodeSample(t=T0, node="x", nic_rx_bytes={"ib0": 500}, nic_tx_bytes={"ib0": 500})
    b = NodeSample(t=T0 + 10, node="x", nic_rx_bytes={"ib0": 100}, nic_tx_bytes={"ib0": 600})
    s = summarize(AttemptRecords(samples={"x": [a, b]}), ctx(nodes=()), T0 + 11)
    assert s.node("x").nics["ib0"].rx_bytes_per_s is None  # went back: a reset, not a rate
    assert s.node("x").nics["ib0"].tx_bytes_per_s == pytest.approx(10)
    one = summarize(AttemptRecords(samples={"x": [a]}), ctx(nodes=()), T0 + 1)
    assert one.node("x").nics == {}
    assert any("second sample" in m for m in one.node("x").missing)


def test_the_window_is_the_last_steps():
    lines = [StepRecord(t=T0 + i, rank=0, node="x", step=i, seconds=1.0) for i in range(30)]
    lines += [
        StepRecord(t=T0 + 30 + i, rank=0, node="x", step=30 + i, seconds=3.0) for i in range(5)
    ]
    assert rank_step(0, lines, 5).step_s == 3.0
    assert rank_step(0, lines, 20).step_s == 1.0
    assert rank_step(0, lines, 20).tokens_per_s is None  # the job never said


def test_a_torn_last_line_is_skipped(tmp_path):
    write_attempt(tmp_path)
    path = tmp_path / "observe" / "0" / "rank-0.steps.jsonl"
    with open(path, "a") as fh:
        fh.write('{"t": 1, "rank": 0, "node": "sn0-n')
    s = summarize(load_attempt(tmp_path, 0), ctx(), NOW)
    assert s.node("sn0-n0").ranks[0].last_step == 40


def test_attempts_stay_apart(tmp_path):
    write_attempt(tmp_path, 0)
    write_attempt(tmp_path, 1, slow=False)
    assert summarize(load_attempt(tmp_path, 1), ctx(attempt=1), NOW).slow == []
    assert load_attempt(tmp_path, 7) == AttemptRecords()


def test_an_ended_attempt_is_not_stale(tmp_path):
    write_attempt(tmp_path)
    s = summarize(load_attempt(tmp_path, 0), ctx(state="CANCELLED"), T0 + 900)
    assert not any(n.stale for n in s.nodes)
    assert not any("old" in m for n in s.nodes for m in n.missing)
    assert summarize(load_attempt(tmp_path, 0), ctx(state="RUNNING"), T0 + 900).nodes[0].stale


def test_the_tail_of_a_long_file_is_enough(tmp_path):
    from slurm_supernode.observe import records

    path = records.steps_path(tmp_path, 0, 0)
    lines = [StepRecord(t=T0 + i, rank=0, node="x", step=i, seconds=0.5) for i in range(5000)]
    records.append(path, lines)
    tail = list(records.read_tail(path, 4096))
    assert 10 < len(tail) < 100 and tail[-1].step == 4999  # whole lines only, the newest
    assert [r.step for r in tail] == list(range(5000 - len(tail), 5000))
    assert list(records.read_tail(path, 10**9)) == list(records.read(path))
    assert list(records.read_tail(tmp_path / "none", 100)) == []
    whole = summarize(load_attempt(tmp_path, 0), ctx(nodes=("x",)), T0 + 5000)
    cut = summarize(load_attempt(tmp_path, 0, tail_bytes=4096), ctx(nodes=("x",)), T0 + 5000)
    assert cut.node("x").ranks == whole.node("x").ranks


def test_what_the_sampler_says_it_cannot_measure(tmp_path):
    from slurm_supernode.observe import records

    why = {"devices": "NVML: no module named pynvml"}
    line = NodeSample(t=T0, node="x", cpu_percent=5.0, missing=why)
    records.append(records.samples_path(tmp_path, 0, "x"), [line])
    n = summarize(load_attempt(tmp_path, 0), ctx(nodes=("x",)), T0 + 1).node("x")
    assert n.missing == ["devices: NVML: no module named pynvml"]


def test_checkpoint_age_from_the_ranks_records():
    steps = {0: [StepRecord(t=T0 + 5, rank=0, node="x", step=1, seconds=1.0, checkpoint_t=T0)]}
    s = summarize(AttemptRecords(steps=steps), ctx(nodes=("x",)), T0 + 100)
    assert s.checkpoint_age_s == pytest.approx(100)
    assert not any(m.startswith("checkpoint") for m in s.missing)
    later = summarize(
        AttemptRecords(steps=steps), ctx(nodes=("x",), checkpoint_t=T0 + 50), T0 + 100
    )
    assert later.checkpoint_age_s == pytest.approx(50)


def test_why_the_plan_is_missing_and_what_it_was_computed_with(tmp_path):
    from dataclasses import replace

    from slurm_supernode.observe.metrics_text import format_summary
    from slurm_supernode.observe.records import CommShare, comm_path, read

    write_attempt(tmp_path)
    s = summarize(load_attempt(tmp_path, 0), ctx(), NOW)
    assert not any(m.startswith("plan share unknown") for m in s.missing)
    for rank in range(8):  # the newest window of every rank: no model given at submit
        path = comm_path(tmp_path, 0, rank)
        old = next(r for r in read(path) if isinstance(r, CommShare))
        why = "no model given at submit (snrun --plan-model PRESET, as snrun plan --model)"
        records_append(path, [replace(old, t=old.t + 10, plan_share=None, plan_note=why)])
    s = summarize(load_attempt(tmp_path, 0), ctx(), NOW)
    assert s.comm.plan_share is None
    assert "plan share unknown: " + why in s.missing
    assert "! plan share unknown: no model given" in format_summary(s)
    for rank in range(8):
        path = comm_path(tmp_path, 0, rank)
        old = [r for r in read(path) if isinstance(r, CommShare)][-1]
        note = "model llama-70b; links: measured inter 5.0 GB/s (bench run r2, 2026-12-01)"
        records_append(path, [replace(old, t=old.t + 10, plan_share=0.2, plan_note=note)])
    s = summarize(load_attempt(tmp_path, 0), ctx(), NOW)
    assert s.comm.plan_share == pytest.approx(0.2) and s.comm.plan_note.startswith("model llama")
    assert not any(m.startswith("plan share unknown") for m in s.missing)
    assert "plan: model llama-70b; links: measured inter 5.0 GB/s" in format_summary(s)
    assert s.to_dict()["comm"]["plan_note"].endswith("2026-12-01)")
