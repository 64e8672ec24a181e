"""The "same failure twice" early stop decides on facts, not timing: the failure class and the
failing program point, never the text of whichever rank or node reported first (identical
failing tasks where different ranks report first get the same number of attempts)."""

from __future__ import annotations

import sys

from slurm_supernode.chain import ledger
from slurm_supernode.chain.causes import Action, Cause
from slurm_supernode.runtime.classify import (
    AttemptResult,
    ExitCode,
    PastAttempt,
    decide,
    default_budgets,
)
from slurm_supernode.runtime.failure_point import failure_point, program_point
from tests.runtime.test_supervisor_loop import Harness

POINT = "/jobs/t/code/train.py:41 in step"


def raised(rank: int, error: str = "ValueError: bad shape (3, 4)", point: str = POINT) -> dict:
    return {"rank": rank, "error": error, "point": point}


def test_program_point_is_the_innermost_frame():
    def inner():
        raise KeyError("x")

    try:
        inner()
    except KeyError:
        point = program_point(sys.exc_info()[2])
    assert point is not None and point.endswith(f"{inner.__code__.co_firstlineno + 1} in inner")
    assert program_point(None) is None


def test_the_attempts_failure_is_its_earliest_ranks_class_and_point(tmp_path):
    ledger.append(tmp_path, "rank_failed", attempt=0, node="n1", **raised(5), died=2.0)
    ledger.append(tmp_path, "rank_failed", attempt=0, node="n0", **raised(0), died=1.0)
    ledger.append(tmp_path, "rank_failed", attempt=1, node="n0", **raised(2), died=1.0)
    ledger.append(tmp_path, "rank_failed", attempt=1, node="n1", **raised(7), died=3.0)
    a0, a1 = ledger.fold(ledger.read(tmp_path)).attempts
    assert a0.rank_errors != a1.rank_errors  # the texts differ: another rank was first
    assert failure_point(a0) == failure_point(a1) == f"ValueError@{POINT}"


def test_without_a_traceback_the_exit_codes_not_the_node(tmp_path):
    ledger.append(tmp_path, "node_exit", attempt=0, node="n0", exit_code=1)
    ledger.append(tmp_path, "node_exit", attempt=0, node="n1", exit_code=0)
    ledger.append(tmp_path, "node_exit", attempt=1, node="n1", exit_code=1)
    ledger.append(tmp_path, "node_exit", attempt=1, node="n0", exit_code=0)
    a0, a1 = ledger.fold(ledger.read(tmp_path)).attempts
    assert failure_point(a0) == failure_point(a1) == "exit 1"


def test_decide_compares_points_not_details():
    budgets = default_budgets()
    now = AttemptResult(
        step_exit=1,
        node_exits={"n0": 1, "n1": 1},
        hosts=["n0", "n1"],
        failed_first=("n1",),
        rank_errors={"n1": "rank 7: ValueError: bad shape (3, 4)"},
        failure_point=f"ValueError@{POINT}",
    )
    before = PastAttempt(
        Cause.APP_ERROR, None, "rank 0: ValueError: ... on n0", f"ValueError@{POINT}"
    )
    assert decide(now, [before], budgets).action is Action.STOP
    elsewhere = PastAttempt(Cause.APP_ERROR, None, "x", f"ValueError@{POINT[:-4]}main")
    assert decide(now, [elsewhere], budgets).action is Action.RESTART
    other_kind = PastAttempt(Cause.APP_ERROR, None, "x", f"KeyError@{POINT}")
    assert decide(now, [other_kind], budgets).action is Action.RESTART


def _identical_failure(first: str, rank: int) -> dict:
    """Every rank fails at the same point; ``first`` (rank ``rank``) reports first."""
    other = "n1" if first == "n0" else "n0"
    return {
        "raised": {first: raised(rank), other: raised(rank + 1)},
        "exits": {"n0": 1, "n1": 1},
        "rc": 1,
        "heartbeat": "step 3",
    }


def test_identical_failures_reported_first_by_different_ranks_stop_after_two(tmp_path, monkeypatch):
    h = Harness(tmp_path, monkeypatch)
    attempts = [_identical_failure("n0", 0), _identical_failure("n1", 3)] * 2
    assert h.run({"attempts": attempts}) is ExitCode.FAILED
    assert h.ends() == [("app_error", "restart"), ("app_error", "stop")]
    assert "same failure twice at the same point" in h.final()["reason"]


def test_a_failure_at_another_point_is_restarted(tmp_path, monkeypatch):
    h = Harness(tmp_path, monkeypatch)
    moved = _identical_failure("n1", 3)
    moved["raised"] = {"n1": raised(3, point="/jobs/t/code/train.py:90 in evaluate")}
    ok = {"exits": {"n0": 0, "n1": 0}, "rc": 0}
    assert h.run({"attempts": [_identical_failure("n0", 0), moved, ok]}) is ExitCode.OK
    assert h.ends() == [("app_error", "restart"), ("app_error", "restart"), ("success", "complete")]
