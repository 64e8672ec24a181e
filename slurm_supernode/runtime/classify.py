"""Failure classes and the decision what to do next: pure functions over enums and plain data.

``decide(result, history, budgets) -> Decision`` is the supervisor's whole policy; the
supervisor only gathers the ``AttemptResult`` and carries the ``Decision`` out.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from slurm_supernode.chain.causes import Action, Cause


class StopSignal(enum.Enum):
    """Signals Slurm sends the batch step that change what an attempt's end means."""

    USR2 = "USR2"  # time limit approaching (sbatch --signal): checkpoint and requeue
    TERM = "TERM"  # cancel, preemption, requeue or node failure


class NodeHealth(enum.IntEnum):
    """`snrun health --json` status of one node (Nagios codes on the wire)."""

    OK = 0
    WARNING = 1
    CRITICAL = 2
    UNKNOWN = 3


class ExitCode(enum.IntEnum):
    """The batch script's exit code (what Slurm records for the job)."""

    OK = 0  # completed, or handed on to a requeued / resubmitted job
    FAILED = 1  # final failure
    SIGNALLED = 143  # 128 + SIGTERM: Slurm ends or requeues the job


FAILURES = (
    Cause.APP_ERROR,
    Cause.HANG,
    Cause.NODE_FAILURE,
    Cause.HEALTH,
    Cause.IMEX,
)  # --max-restarts
Budgets = Mapping[Cause, int]


@dataclass(frozen=True)
class AttemptResult:
    """What one attempt left behind."""

    step_exit: int  # srun's exit code
    node_exits: Mapping[str, int]  # agents that reported, hostname -> exit code
    hosts: Sequence[str]  # the allocation
    bad_nodes: Sequence[str] = ()  # Slurm says down/drained/not responding
    signal: StopSignal | None = None
    hung: bool = False  # the supervisor stopped the step for lack of progress
    progress: str | None = None  # last progress marker the training script wrote
    health_failed: Sequence[str] = ()  # nodes whose pre-flight health check failed
    cancelled: bool = False  # with signal TERM: the job was cancelled (snrun cancel, scancel)
    # nodes whose non-zero exit made the supervisor end the step on every other node
    failed_first: Sequence[str] = ()
    config_errors: Mapping[str, str] = field(default_factory=dict)  # node -> the error
    rank_errors: Mapping[str, str] = field(default_factory=dict)  # node -> "rank R: Type: msg"
    # nodes whose container did not start -> the runtime's reason
    container_failed: Mapping[str, str] = field(default_factory=dict)
    # nodes stopped (another failed first) before their container started
    container_unstarted: Sequence[str] = ()
    failure_point: str | None = None  # runtime/failure_point.py: what failed, where
    # nodes whose IMEX preflight failed or whose ranks' NCCL lacked the channel -> why
    imex_failed: Mapping[str, str] = field(default_factory=dict)
    # nodes the slow-node judge named, for which the attempt was ended (--on-slow-node requeue)
    slow_nodes: Sequence[str] = ()


@dataclass(frozen=True)
class PastAttempt:
    """What ``decide`` needs of an earlier attempt of the chain."""

    cause: Cause
    progress: str | None = None
    detail: str | None = None
    failure_point: str | None = None  # runtime/failure_point.py: class and program point


@dataclass(frozen=True)
class Decision:
    cause: Cause
    action: Action
    detail: str
    exclude: tuple[str, ...] = ()


def classify(result: AttemptResult) -> tuple[Cause, tuple[str, ...], str]:
    """(cause, nodes to blame, detail)."""
    early = _before_training(result)
    if early is not None:
        return early
    if result.signal is StopSignal.USR2:
        return Cause.TIME_LIMIT, (), "time limit approaching (SIGUSR2): checkpoint and requeue"
    if result.signal is StopSignal.TERM:
        if result.bad_nodes:
            bad = tuple(result.bad_nodes)
            return Cause.NODE_FAILURE, bad, f"node(s) lost: {','.join(bad)}; Slurm requeues the job"
        if result.cancelled:
            return Cause.CANCELLED, (), "job cancelled (snrun cancel or scancel)"
        return Cause.PREEMPTION, (), "job signalled to stop (preempted or requeued)"
    all_zero = all(c == 0 for c in result.node_exits.values())
    if result.step_exit == 0 and all_zero and set(result.node_exits) >= set(result.hosts):
        return Cause.SUCCESS, (), "all nodes exited 0"
    missing = tuple(h for h in result.hosts if h not in result.node_exits)
    bad = tuple(dict.fromkeys([*result.bad_nodes, *missing]))
    container = _container_cause(result) or _slow_cause(result)
    if container is not None:
        return container
    if result.hung:
        return Cause.HANG, (), "no progress within the hang timeout: step stopped"
    if result.failed_first and not result.bad_nodes:
        # the other nodes were stopped by the supervisor: they are neither lost nor the cause
        first = result.failed_first[0]
        if first in result.rank_errors:
            what = f"{result.rank_errors[first]} on {first}"
            return Cause.APP_ERROR, (), f"{what}; step ended on every node"
        codes = ",".join(f"{h}={result.node_exits.get(h, '?')}" for h in result.failed_first)
        return Cause.APP_ERROR, (), f"ranks exited non-zero ({codes}); step ended on the others"
    if result.bad_nodes or (missing and result.node_exits):
        return Cause.NODE_FAILURE, bad, f"node(s) lost: {','.join(bad)}"
    failed = {h: c for h, c in result.node_exits.items() if c != 0}
    if failed:
        codes = ",".join(f"{h}={c}" for h, c in sorted(failed.items()))
        return Cause.APP_ERROR, (), f"ranks exited non-zero ({codes})"
    if missing:
        return Cause.NODE_FAILURE, missing, f"no agent reported from {','.join(missing)}"
    return Cause.APP_ERROR, (), f"step exited {result.step_exit}"


def _before_training(result: AttemptResult) -> tuple[Cause, tuple[str, ...], str] | None:
    """Failures found before or instead of the training itself: a node's pre-flight health,
    its IMEX preflight (or its ranks' NCCL lacking the channel), a configuration error."""
    if result.health_failed:
        bad = tuple(result.health_failed)
        return Cause.HEALTH, bad, f"health check failed on {','.join(bad)}"
    imex = result.imex_failed  # preflight failures; ranks' NCCL without the channel (agent)
    if imex and result.signal is None:
        from slurm_supernode.runtime.imex_cause import imex_blame

        blame, detail = imex_blame(imex, result.hosts)
        return Cause.IMEX, blame, detail
    if result.config_errors:
        node, error = next(iter(result.config_errors.items()))
        return Cause.CONFIG, (), f"configuration error on {node}: {error}"
    return None


def _slow_cause(result: AttemptResult) -> tuple[Cause, tuple[str, ...], str] | None:
    """The attempt ended for a slow node (--on-slow-node requeue): requeue without it."""
    if not result.slow_nodes or result.bad_nodes:
        return None
    slow = tuple(result.slow_nodes)
    return Cause.SLOW, slow, f"slow node(s) {','.join(slow)}: requeued without them"


def _container_cause(result: AttemptResult) -> tuple[Cause, tuple[str, ...], str] | None:
    """A container that did not start: on every node the image is the cause (a restart
    repeats it); on some nodes only, while it started on others, those nodes (image cache,
    runtime, mounts) are. Nodes stopped before their container started (fail fast: another
    node failed first) showed nothing either way: they count as not started, so an image that
    started nowhere is the image's fault however quickly the first failure stopped the rest."""
    if not result.container_failed or result.bad_nodes:
        return None
    failed_nodes = sorted(result.container_failed)
    why = result.container_failed[failed_nodes[0]]
    if set(failed_nodes) | set(result.container_unstarted) >= set(result.hosts):
        return Cause.CONTAINER, (), f"the container did not start on any node: {why}"
    return (
        Cause.NODE_FAILURE,
        tuple(failed_nodes),
        f"the container did not start on {','.join(failed_nodes)}: {why}",
    )


# What each failure class calls for when its budget allows.
_ON_FAILURE = {
    Cause.APP_ERROR: Action.RESTART,
    Cause.HANG: Action.RESTART,
    Cause.NODE_FAILURE: Action.REQUEUE,
    Cause.HEALTH: Action.REQUEUE,
    Cause.IMEX: Action.REQUEUE,
    Cause.TIME_LIMIT: Action.REQUEUE,
    Cause.PREEMPTION: Action.STOP,
    Cause.CONTAINER: Action.STOP,
    Cause.CANCELLED: Action.STOP,
    Cause.SLOW: Action.REQUEUE,
}


def decide(result: AttemptResult, history: Sequence[PastAttempt], budgets: Budgets) -> Decision:
    """Next action from this attempt and the chain's earlier attempts.

    Each cause has its own budget. The same application failure twice in a row at the same
    point (same failure class and failing program point, same progress marker) stops early:
    restarting would only repeat it. Which rank or node reported first (timing) never
    decides it: the detail text names that one, so it counts only where no point is known.
    """
    cause, blame, detail = classify(result)
    if cause is Cause.SUCCESS:
        return Decision(cause, Action.COMPLETE, detail)
    if result.signal is StopSignal.TERM:
        return Decision(cause, Action.LEAVE_TO_SLURM, detail, exclude=blame)
    if cause is Cause.CONFIG:
        return Decision(cause, Action.STOP, f"{detail}; not retried: fix the configuration")
    used = sum(1 for past in history if past.cause is cause)
    budget = budgets.get(cause, 0)
    if used >= budget:
        return Decision(cause, Action.STOP, f"{detail}; {cause.value} budget of {budget} used up")
    if cause is Cause.APP_ERROR and history:
        last = history[-1]
        if last.cause is cause and last.progress == result.progress and _same(last, result, detail):
            return Decision(cause, Action.STOP, f"{detail}; same failure twice at the same point")
    action = _ON_FAILURE[cause]
    exclude = blame if action is Action.REQUEUE else ()
    return Decision(cause, action, detail, exclude=exclude)


def _same(last: PastAttempt, result: AttemptResult, detail: str) -> bool:
    if last.failure_point is not None or result.failure_point is not None:
        return last.failure_point == result.failure_point
    return last.detail == detail  # ledgers written before failure points were recorded


def default_budgets(
    max_restarts: int | None = None, site: Mapping[str, int] | None = None
) -> dict[Cause, int]:
    """Per-cause budgets: 3 for failures, 50 for time limits and preemptions; then the site's
    `restarts:` defaults (keyed by cause name); then --max-restarts for every failure class."""
    budgets = {cause: 3 for cause in FAILURES} | {Cause.TIME_LIMIT: 50, Cause.PREEMPTION: 50}
    budgets[Cause.SLOW] = 3
    budgets.update({Cause(name): n for name, n in (site or {}).items()})
    if max_restarts is not None:
        budgets.update({cause: max_restarts for cause in FAILURES})
    return budgets
