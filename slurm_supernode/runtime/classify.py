"""Failure classes and the decision what to do next. Pure functions over plain data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

CAUSES = (
    "success",
    "app_error",
    "node_failure",
    "hang",
    "preemption",
    "time_limit",
    "health",
    "cancelled",
)
# Fastest first: restart in the allocation, requeue the same job (bad nodes excluded),
# submit a fresh job with --exclude, or stop with a final state.
# "slurm": the job was signalled (SIGTERM) by Slurm, which requeues or ends it; nothing to do.
ACTIONS = ("none", "restart", "requeue", "resubmit", "stop", "slurm")


@dataclass(frozen=True)
class AttemptResult:
    """What one attempt left behind."""

    step_exit: int  # srun's exit code
    node_exits: Mapping[str, int]  # agents that reported, hostname -> exit code
    hosts: Sequence[str]  # the allocation
    bad_nodes: Sequence[str] = ()  # Slurm says down/drained/not responding
    signal: str | None = None  # "USR2" (time limit warning), "TERM" (cancel/preempt)
    hung: bool = False  # the supervisor stopped the step for lack of progress
    progress: str | None = None  # last progress marker the training script wrote
    health_failed: Sequence[str] = ()  # nodes whose pre-flight health check failed


@dataclass(frozen=True)
class Decision:
    cause: str
    action: str
    detail: str
    exclude: tuple[str, ...] = ()


def classify(result: AttemptResult) -> tuple[str, tuple[str, ...], str]:
    """(cause, nodes to blame, detail)."""
    if result.health_failed:
        bad = tuple(result.health_failed)
        return "health", bad, f"health check failed on {','.join(bad)}"
    if result.signal == "USR2":
        return "time_limit", (), "time limit approaching (SIGUSR2): checkpoint and requeue"
    if result.signal == "TERM":
        if result.bad_nodes:
            bad = tuple(result.bad_nodes)
            return "node_failure", bad, f"node(s) lost: {','.join(bad)}; Slurm requeues the job"
        return "preemption", (), "job signalled to stop (preempted, cancelled or requeued)"
    all_zero = all(c == 0 for c in result.node_exits.values())
    if result.step_exit == 0 and all_zero and set(result.node_exits) >= set(result.hosts):
        return "success", (), "all nodes exited 0"
    missing = tuple(h for h in result.hosts if h not in result.node_exits)
    bad = tuple(dict.fromkeys([*result.bad_nodes, *missing]))
    if result.hung:
        return "hang", (), "no progress within the hang timeout: step stopped"
    if result.bad_nodes or (missing and result.node_exits):
        return "node_failure", bad, f"node(s) lost: {','.join(bad)}"
    failed = {h: c for h, c in result.node_exits.items() if c != 0}
    if failed:
        codes = ",".join(f"{h}={c}" for h, c in sorted(failed.items()))
        return "app_error", (), f"ranks exited non-zero ({codes})"
    if missing:
        return "node_failure", missing, f"no agent reported from {','.join(missing)}"
    return "app_error", (), f"step exited {result.step_exit}"


def decide(
    result: AttemptResult,
    history: Sequence[tuple[str, str | None, str | None]],
    budgets: Mapping[str, int],
) -> Decision:
    """Next action from this attempt and the chain's history of (cause, progress, detail).

    Each cause has its own budget. The same application failure twice in a row at the same
    point (same detail and progress marker) stops early: restarting would only repeat it.
    """
    cause, blame, detail = classify(result)
    if cause == "success":
        return Decision(cause, "none", detail)
    if result.signal == "TERM":
        return Decision(cause, "slurm", detail, exclude=blame)
    used = sum(1 for c, _, _ in history if c == cause)
    budget = budgets.get(cause, 0)
    if used >= budget:
        return Decision(cause, "stop", f"{detail}; {cause} budget of {budget} used up")
    if cause == "app_error" and history:
        last_cause, last_progress, last_detail = history[-1]
        if last_cause == cause and last_progress == result.progress and last_detail == detail:
            return Decision(cause, "stop", f"{detail}; same failure twice at the same point")
    if cause in ("app_error", "hang"):
        return Decision(cause, "restart", detail)
    if cause in ("node_failure", "health"):
        return Decision(cause, "requeue", detail, exclude=blame)
    if cause == "time_limit":
        return Decision(cause, "requeue", detail)
    return Decision(cause, "stop", detail)


FAILURES = ("app_error", "hang", "node_failure", "health")  # what --max-restarts sets


def default_budgets(
    max_restarts: int | None = None, site: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Per-cause budgets: 3 for failures, 50 for time limits and preemptions; then the site's
    `restarts:` defaults; then --max-restarts for every failure class."""
    budgets = {cause: 3 for cause in FAILURES} | {"time_limit": 50, "preemption": 50}
    budgets.update(site or {})
    if max_restarts is not None:
        budgets.update({cause: max_restarts for cause in FAILURES})
    return budgets
