"""The slow-node judge: a node's busy time per step against its peers' median, slow only in
several windows in a row; the supervisor's policy; status lines; the classifier's cause."""

from __future__ import annotations

import json

from slurm_supernode.chain import ledger
from slurm_supernode.chain.causes import Action, Cause
from slurm_supernode.chain.slow_status import slow_lines, with_slow_marks
from slurm_supernode.observe.records import StepRecord, append, read, slow_path, steps_path
from slurm_supernode.runtime import failfast
from slurm_supernode.runtime.classify import AttemptResult, decide, default_budgets
from slurm_supernode.runtime.slow_judge import SlowJudge
from slurm_supernode.runtime.slow_watch import SlowWatch

NODES = {"n1": "sn1", "n2": "sn1", "n3": "sn2", "n4": "sn2"}


def _steps(job_dir, rank, node, first_step, busy, n=3, t0=0.0):
    records = [
        StepRecord(t=t0 + i, rank=rank, node=node, step=first_step + i, seconds=1.0, busy_s=busy)
        for i in range(n)
    ]
    append(steps_path(job_dir, 0, rank), records)


def _window(job_dir, k, slow=0.5):
    for rank, node in enumerate(NODES):
        _steps(job_dir, rank, node, 2 + 3 * k, slow if node == "n3" else 0.2)


def test_named_only_after_the_windows_in_a_row(tmp_path):
    judge = SlowJudge(tmp_path, 0, NODES, slow_pct=20, windows=3, window=5.0)
    assert judge.look(0.0) == []  # the first look starts the clock
    marks = []
    for k in range(3):
        _window(tmp_path, k)
        assert judge.look(k * 5.0 + 1.0) == []  # within the window: not judged yet
        marks += judge.look(k * 5.0 + 5.0)
        assert bool(marks) == (k == 2)  # slow in 3 windows in a row, not before
    assert [m.node for m in marks] == ["n3"]
    mark = marks[0]
    assert mark.supernode == "sn2" and 2.4 < mark.ratio < 2.6
    assert "500 ms per step against 200 ms" in mark.evidence
    assert "in 3 windows of 5 s in a row" in mark.evidence
    assert [m.node for m in read(slow_path(tmp_path, 0))] == ["n3"]
    _window(tmp_path, 3)
    assert judge.look(100.0) == []  # named once per attempt


def test_noise_in_one_window_names_nobody(tmp_path):
    judge = SlowJudge(tmp_path, 0, NODES, slow_pct=20, windows=3, window=5.0)
    got = []
    for k, slow in enumerate([0.5, 0.5, 0.21, 0.5, 0.5]):  # one window back among its peers
        _window(tmp_path, k, slow)
        got += judge.judge(judge._new_busy(), float(k))
    assert got == []


def test_a_gap_of_a_few_ms_is_noise_whatever_its_ratio(tmp_path):
    judge = SlowJudge(tmp_path, 0, NODES, slow_pct=20, windows=1)
    busy = {n: [0.0037 if n == "n1" else 0.0030] for n in NODES}  # 1.23x, 0.7 ms
    assert judge.judge(busy, 1.0) == []
    busy["n1"] = [0.0090]  # 3x, 6 ms
    assert [m.node for m in judge.judge(busy, 2.0)] == ["n1"]


def test_wall_seconds_when_no_busy_time_and_a_torn_line(tmp_path):
    judge = SlowJudge(tmp_path, 0, {}, slow_pct=20, windows=1)
    for rank, node in enumerate(["a", "b", "c"]):
        recs = [
            StepRecord(t=1, rank=rank, node=node, step=s, seconds=3.0 if node == "c" else 1.0)
            for s in (1, 2, 3)
        ]
        append(steps_path(tmp_path, 0, rank), recs)
    with open(steps_path(tmp_path, 0, 0), "a") as fh:
        fh.write('{"t": 1, "rank": 0, "node": "a", "st')  # a writer mid-line
    marks = judge.judge(judge._new_busy(), 1.0)
    assert [m.node for m in marks] == ["c"] and marks[0].supernode is None


def _judge_ready(tmp_path):
    judge = SlowJudge(tmp_path, 0, NODES, slow_pct=20, windows=1, window=5.0)
    _window(tmp_path, 0)
    judge.look(0.0)
    judge._next = 0.0
    return judge


def test_warn_says_requeue_stops_and_the_cause_is_slow(tmp_path, capsys):
    warn = SlowWatch(tmp_path, 0, 7, _judge_ready(tmp_path), "warn")
    assert warn.look() is False and warn.nodes == ()
    assert "snrun: slow node n3 (sn2): busy 500 ms" in capsys.readouterr().err
    assert failfast.read_stop(tmp_path, 0) is None
    other = tmp_path / "other"
    requeue = SlowWatch(other, 0, 7, _judge_ready(other), "requeue")
    assert requeue.look() is True and requeue.nodes == ("n3",)
    stop = failfast.read_stop(other, 0)
    assert stop is not None and stop.failed == () and stop.stops("n1") and stop.stops("n3")
    assert [r["nodes"] for r in ledger.read(other) if r["event"] == "slow_node"] == [["n3"]]
    assert requeue.look() is False  # once
    result = AttemptResult(
        step_exit=1, node_exits=dict.fromkeys(NODES, 1), hosts=list(NODES), slow_nodes=("n3",)
    )
    d = decide(result, [], default_budgets())
    assert (d.cause, d.action, d.exclude) == (Cause.SLOW, Action.REQUEUE, ("n3",))
    assert Cause("slow") is Cause.SLOW  # the ledger's value folds back


def test_status_lines(tmp_path):
    _window(tmp_path, 0)
    judge = SlowJudge(tmp_path, 0, NODES, slow_pct=20, windows=1)
    judge.judge(judge._new_busy(), 1.0)
    row = with_slow_marks(tmp_path, {"attempt": 0})
    assert json.dumps(row)  # JSON-ready for snrun status --json
    (line,) = slow_lines(row)
    assert line.startswith("    slow node n3 (sn2): busy 500 ms per step against 200 ms")
    assert with_slow_marks(tmp_path, {"attempt": 1}) == {"attempt": 1}
