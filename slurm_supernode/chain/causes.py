"""Why an attempt ended and what came next: the words the ledger stores.

The supervisor's policy (``runtime.classify``) chooses them; the chain's readers (status, the
lost-supervisor path, the API) read them back, so they live below both.
"""

from __future__ import annotations

import enum


class Cause(enum.Enum):
    """Why an attempt ended (the ledger stores the value)."""

    SUCCESS = "success"
    APP_ERROR = "app_error"
    NODE_FAILURE = "node_failure"
    HANG = "hang"
    PREEMPTION = "preemption"
    TIME_LIMIT = "time_limit"
    HEALTH = "health"
    CONTAINER = "container"  # the job's container did not start on any node: no restart
    CANCELLED = "cancelled"
    SUPERVISOR_LOST = "supervisor"  # the supervisor itself died (SIGKILL, OOM): no verdict
    IMEX = "imex"  # a tray without its IMEX channel / domain / fabric clique (NVL72)
    CONFIG = "config"  # a configuration error (e.g. the HCCL rank table): a rerun repeats it
    SLOW = "slow"  # --on-slow-node requeue: a node slower than its peers ended the attempt


class Action(enum.Enum):
    """What the supervisor does next, fastest first (the ledger stores the value)."""

    COMPLETE = "complete"  # every node exited 0: the chain is done
    RESTART = "restart"  # a new srun step in the same allocation
    REQUEUE = "requeue"  # the same job again, bad nodes excluded (resubmit if Slurm refuses)
    RESUBMIT = "resubmit"  # a fresh job with --exclude, after this one
    STOP = "stop"  # a final failed state
    LEAVE_TO_SLURM = "slurm"  # Slurm signalled the job (SIGTERM): it requeues or ends it
