from __future__ import annotations

from slurm_supernode.chain.causes import Action, Cause
from slurm_supernode.jobenv import JobEnvironment
from slurm_supernode.runtime.classify import (
    AttemptResult,
    PastAttempt,
    StopSignal,
    classify,
    decide,
    default_budgets,
)
from tests.runtime.inputs import make_inputs

A, C = Action, Cause

HOSTS = ["n0", "n1", "n2", "n3"]


def result(**kw) -> AttemptResult:
    base = dict(step_exit=0, node_exits={h: 0 for h in HOSTS}, hosts=HOSTS)
    base.update(kw)
    return AttemptResult(**base)


def test_success_needs_every_node() -> None:
    assert classify(result())[0] == C.SUCCESS
    partial = result(node_exits={"n0": 0, "n1": 0})
    assert classify(partial)[0] == C.NODE_FAILURE


def test_app_error_restarts_in_place_then_stops_on_repeat() -> None:
    r = result(step_exit=1, node_exits={"n0": 1, "n1": 0, "n2": 0, "n3": 0}, progress="step 3")
    budgets = default_budgets(3)
    first = decide(r, [], budgets)
    assert (first.cause, first.action) == (C.APP_ERROR, A.RESTART)
    again = decide(r, [PastAttempt(C.APP_ERROR, "step 3", first.detail)], budgets)
    assert again.action == A.STOP and "same failure twice" in again.detail
    moved_on = decide(r, [PastAttempt(C.APP_ERROR, "step 1", first.detail)], budgets)
    assert moved_on.action == A.RESTART


def test_budget_per_cause() -> None:
    r = result(step_exit=1, node_exits={"n0": 1, "n1": 0, "n2": 0, "n3": 0})
    hist = [PastAttempt(C.APP_ERROR, str(i), "other") for i in range(2)]
    assert decide(r, hist, default_budgets(2)).action == A.STOP
    # node failures do not use up the app_error budget
    lost = result(step_exit=1, node_exits={"n0": 0, "n1": 0, "n2": 0}, bad_nodes=["n3"])
    d = decide(lost, hist, default_budgets(2))
    assert (d.cause, d.action, d.exclude) == (C.NODE_FAILURE, A.REQUEUE, ("n3",))


def test_signals_and_hang() -> None:
    assert (
        decide(result(signal=StopSignal.USR2, step_exit=0), [], default_budgets(1)).action
        == A.REQUEUE
    )
    assert classify(result(signal=StopSignal.TERM))[0] == C.PREEMPTION
    assert classify(result(signal=StopSignal.TERM, cancelled=True))[0] == C.CANCELLED
    assert classify(result(cancelled=True, step_exit=1))[0] == C.APP_ERROR  # no signal: a failure
    term = decide(result(signal=StopSignal.TERM, step_exit=143), [], default_budgets(1))
    assert term.action == A.LEAVE_TO_SLURM  # Slurm requeues or ends the job: no final state here
    lost = decide(
        result(signal=StopSignal.TERM, step_exit=143, bad_nodes=["n2"]), [], default_budgets(1)
    )
    assert (lost.cause, lost.action, lost.exclude) == (C.NODE_FAILURE, A.LEAVE_TO_SLURM, ("n2",))
    hung = decide(result(step_exit=143, hung=True), [], default_budgets(1))
    assert (hung.cause, hung.action) == (C.HANG, A.RESTART)
    health = decide(result(health_failed=["n2"]), [], default_budgets(1))
    assert (health.cause, health.action, health.exclude) == (C.HEALTH, A.REQUEUE, ("n2",))


def test_budgets_defaults_then_site_then_max_restarts():
    assert default_budgets() == {
        C.APP_ERROR: 3, C.HANG: 3, C.NODE_FAILURE: 3, C.HEALTH: 3, C.IMEX: 3,
        C.TIME_LIMIT: 50, C.PREEMPTION: 50, C.SLOW: 3,
    }  # fmt: skip
    site = {"app_error": 1, "node_failure": 6, "time_limit": 9}
    merged = default_budgets(None, site)
    assert (merged[C.APP_ERROR], merged[C.NODE_FAILURE], merged[C.HANG]) == (1, 6, 3)
    assert merged[C.TIME_LIMIT] == 9
    cli = default_budgets(2, site)  # --max-restarts sets every failure class, not time limits
    assert [cli[c] for c in (C.APP_ERROR, C.HANG, C.NODE_FAILURE, C.HEALTH)] == [2, 2, 2, 2]
    assert cli[C.TIME_LIMIT] == 9
    failed = result(step_exit=1, node_exits={h: int(h == "n1") for h in HOSTS})
    assert decide(failed, [], default_budgets(None, site)).action == A.RESTART
    assert (
        decide(failed, [PastAttempt(C.APP_ERROR, "x", "y")], default_budgets(None, site)).action
        == A.STOP
    )


def test_supervisor_budgets_from_inputs_and_environment() -> None:
    from slurm_supernode.runtime.supervisor_config import budgets_for

    inputs = make_inputs(max_restarts=None, site_restarts={"hang": 0, "time_limit": 4})
    b = budgets_for(JobEnvironment(), inputs)
    assert (b[C.HANG], b[C.APP_ERROR], b[C.TIME_LIMIT]) == (0, 3, 4)
    b = budgets_for(JobEnvironment.from_environ({"SNRUN_MAX_RESTARTS": "5"}), inputs)
    assert (b[C.HANG], b[C.APP_ERROR], b[C.TIME_LIMIT]) == (5, 5, 4)
    assert budgets_for(JobEnvironment(), make_inputs(max_restarts=1))[C.NODE_FAILURE] == 1


def test_every_failure_cause_has_an_action_and_success_is_complete() -> None:
    """No cause falls through: each one maps to an Action member (never a bare string)."""
    for cause in Cause:
        if cause is Cause.SUCCESS:
            continue
        hist: list[PastAttempt] = []
        r = {
            C.APP_ERROR: result(step_exit=1, node_exits={h: 1 for h in HOSTS}),
            C.NODE_FAILURE: result(step_exit=1, bad_nodes=["n1"]),
            C.HANG: result(step_exit=143, hung=True, node_exits={}),
            C.PREEMPTION: result(signal=StopSignal.TERM),
            C.TIME_LIMIT: result(signal=StopSignal.USR2),
            C.HEALTH: result(health_failed=["n0"]),
            C.CONTAINER: result(
                step_exit=1,
                node_exits={h: 1 for h in HOSTS},
                container_failed=dict.fromkeys(HOSTS, "x"),
            ),
        }.get(cause)
        if r is None:
            continue  # CANCELLED is recorded by `snrun cancel`, never classified
        d = decide(r, hist, default_budgets())
        assert d.cause is cause and isinstance(d.action, Action)
    assert decide(result(), [], default_budgets()).action is A.COMPLETE


def test_a_container_that_starts_nowhere_stops_and_on_some_nodes_blames_them() -> None:
    """The image cannot start: a restart would only repeat it. Some nodes only: their runtime,
    image cache or mounts are the problem, so they are excluded like lost nodes."""
    why = "runc run failed: exec: /bin/sh: no such file"
    everywhere = result(
        step_exit=1, node_exits={h: 1 for h in HOSTS}, container_failed=dict.fromkeys(HOSTS, why)
    )
    d = decide(everywhere, [], default_budgets(3))
    assert (d.cause, d.action) == (C.CONTAINER, A.STOP) and why in d.detail
    two = result(
        step_exit=1,
        node_exits={"n0": 1, "n1": 1, "n2": 143, "n3": 143},
        container_failed={"n1": why, "n0": why},
    )
    d = decide(two, [], default_budgets(3))
    assert (d.cause, d.action, d.exclude) == (C.NODE_FAILURE, A.REQUEUE, ("n0", "n1"))
    assert "did not start on n0,n1" in d.detail


def test_nodes_stopped_before_their_container_started_prove_nothing() -> None:
    """Under load one node's broken image fails first and fail fast stops the other before
    its container starts: nothing started anywhere, so the image is the cause (a requeue
    without the first node would only fail again); a node whose container did start proves
    the image, and the failed node is blamed."""
    why = "runc run failed: exec: /bin/sh: no such file"
    unstarted = result(
        step_exit=137,
        node_exits={"n0": 137, "n1": 1, "n2": 137, "n3": 137},
        container_failed={"n1": why},
        container_unstarted=("n0", "n2", "n3"),
    )
    d = decide(unstarted, [], default_budgets(3))
    assert (d.cause, d.action) == (C.CONTAINER, A.STOP) and why in d.detail
    started_elsewhere = result(
        step_exit=137,
        node_exits={"n0": 137, "n1": 1, "n2": 137, "n3": 137},
        container_failed={"n1": why},
        container_unstarted=("n0",),
    )
    d = decide(started_elsewhere, [], default_budgets(3))
    assert (d.cause, d.action, d.exclude) == (C.NODE_FAILURE, A.REQUEUE, ("n1",))
