from __future__ import annotations

from slurm_supernode.runtime.classify import AttemptResult, classify, decide, default_budgets

HOSTS = ["n0", "n1", "n2", "n3"]


def result(**kw) -> AttemptResult:
    base = dict(step_exit=0, node_exits={h: 0 for h in HOSTS}, hosts=HOSTS)
    base.update(kw)
    return AttemptResult(**base)


def test_success_needs_every_node() -> None:
    assert classify(result())[0] == "success"
    partial = result(node_exits={"n0": 0, "n1": 0})
    assert classify(partial)[0] == "node_failure"


def test_app_error_restarts_in_place_then_stops_on_repeat() -> None:
    r = result(step_exit=1, node_exits={"n0": 1, "n1": 0, "n2": 0, "n3": 0}, progress="step 3")
    budgets = default_budgets(3)
    first = decide(r, [], budgets)
    assert (first.cause, first.action) == ("app_error", "restart")
    again = decide(r, [("app_error", "step 3", first.detail)], budgets)
    assert again.action == "stop" and "same failure twice" in again.detail
    moved_on = decide(r, [("app_error", "step 1", first.detail)], budgets)
    assert moved_on.action == "restart"


def test_budget_per_cause() -> None:
    r = result(step_exit=1, node_exits={"n0": 1, "n1": 0, "n2": 0, "n3": 0})
    hist = [("app_error", str(i), "other") for i in range(2)]
    assert decide(r, hist, default_budgets(2)).action == "stop"
    # node failures do not use up the app_error budget
    lost = result(step_exit=1, node_exits={"n0": 0, "n1": 0, "n2": 0}, bad_nodes=["n3"])
    d = decide(lost, hist, default_budgets(2))
    assert (d.cause, d.action, d.exclude) == ("node_failure", "requeue", ("n3",))


def test_signals_and_hang() -> None:
    assert decide(result(signal="USR2", step_exit=0), [], default_budgets(1)).action == "requeue"
    assert classify(result(signal="TERM"))[0] == "preemption"
    term = decide(result(signal="TERM", step_exit=143), [], default_budgets(1))
    assert term.action == "slurm"  # Slurm requeues or ends the job: no final state here
    lost = decide(result(signal="TERM", step_exit=143, bad_nodes=["n2"]), [], default_budgets(1))
    assert (lost.cause, lost.action, lost.exclude) == ("node_failure", "slurm", ("n2",))
    hung = decide(result(step_exit=143, hung=True), [], default_budgets(1))
    assert (hung.cause, hung.action) == ("hang", "restart")
    health = decide(result(health_failed=["n2"]), [], default_budgets(1))
    assert (health.cause, health.action, health.exclude) == ("health", "requeue", ("n2",))


def test_budgets_defaults_then_site_then_max_restarts():
    assert default_budgets() == {
        "app_error": 3, "hang": 3, "node_failure": 3, "health": 3,
        "time_limit": 50, "preemption": 50,
    }  # fmt: skip
    site = {"app_error": 1, "node_failure": 6, "time_limit": 9}
    merged = default_budgets(None, site)
    assert (merged["app_error"], merged["node_failure"], merged["hang"]) == (1, 6, 3)
    assert merged["time_limit"] == 9
    cli = default_budgets(2, site)  # --max-restarts sets every failure class, not time limits
    assert [cli[c] for c in ("app_error", "hang", "node_failure", "health")] == [2, 2, 2, 2]
    assert cli["time_limit"] == 9
    failed = result(step_exit=1, node_exits={h: int(h == "n1") for h in HOSTS})
    assert decide(failed, [], default_budgets(None, site)).action == "restart"
    assert decide(failed, [("app_error", "x", "y")], default_budgets(None, site)).action == "stop"


def test_supervisor_budgets_from_plan_and_environment() -> None:
    from slurm_supernode.runtime.supervisor import budgets_for

    inputs = {"max_restarts": None, "site_restarts": {"hang": 0, "time_limit": 4}}
    b = budgets_for({}, inputs)
    assert (b["hang"], b["app_error"], b["time_limit"]) == (0, 3, 4)
    b = budgets_for({"SNRUN_MAX_RESTARTS": "5"}, inputs)
    assert (b["hang"], b["app_error"], b["time_limit"]) == (5, 5, 4)
    assert budgets_for({}, {"max_restarts": 1})["node_failure"] == 1
