"""A job's reason as one text whatever Slurm answered it, and a pending job's reason in words.

**One text.** The backends word a reason differently: on 25.11 pyslurm gives a job killed by a
signal ``RaisedSignal:9(Killed)``, the command line (``scontrol --json``, ``-o``) just
``RaisedSignal`` with the signal in the exit code (``0:9``). ``job_reason`` makes both the
fuller form from the record's own signal, so that every reader gives the same record
(docs/pyslurm.md).

**In words.** ``pending_reason`` says what a pending job waits for, and whether it can never
start as it stands (``never``): a dependency that can never be satisfied, a request the
partition, account or QOS can never serve. Slurm keeps such a job PENDING; snrun says so.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass

_RAISED = re.compile(r"^RaisedSignal(?::(\d+)(?:\(.*\))?)?$")


def job_reason(reason: str | None, exit_signal: int) -> str | None:
    """Slurm's reason as one text for every backend (``None``/``"None"`` -> None)."""
    if reason is None or reason in ("", "None", "(null)"):
        return None
    m = _RAISED.match(reason)
    if m is None:
        return reason
    number = int(m.group(1)) if m.group(1) else exit_signal
    if number <= 0:
        return "RaisedSignal"
    try:
        words = signal.strsignal(number) or f"signal {number}"
    except ValueError:
        words = f"signal {number}"
    return f"RaisedSignal:{number}({words})"


@dataclass(frozen=True)
class PendingReason:
    """Slurm's reason for a pending job (``code``), what it means (``words``) and whether the
    job can never start as it stands (``never``: cancel it, or change what it asks for)."""

    code: str
    words: str
    never: bool

    def __str__(self) -> str:
        return f"{self.code}: {self.words}"


# Reasons that do not pass by waiting: the job can never start unless someone changes it, or
# the partition, account or QOS it asks for.
_NEVER = {
    "DependencyNeverSatisfied": "the job it depends on ended in a way that can never satisfy "
    "the dependency; it will never start: cancel it",
    "BadConstraints": "no node can satisfy its constraints (features, sizes)",
    "PartitionNodeLimit": "it asks for more nodes than the partition allows per job",
    "PartitionTimeLimit": "its time limit is longer than the partition's",
    "PartitionConfig": "the partition cannot serve it as configured",
    "AccountNotAllowed": "its account may not use the partition",
    "QOSNotAllowed": "its QOS may not use the partition",
    "InvalidAccount": "its account is not valid",
    "InvalidQOS": "its QOS is not valid",
}
# Limits per job: the job alone is over them, and waiting changes nothing.
_NEVER_SUFFIXES = ("PerJobLimit", "MinJobLimit")
_WAITING = {
    "Resources": "waiting for nodes to become free",
    "Priority": "waiting for jobs of higher priority",
    "Dependency": "waiting for the job it depends on",
    "BeginTime": "waiting for its begin time",
    "JobHeldUser": "held by its user: 'scontrol release JOB' lets it start",
    "JobHeldAdmin": "held by an administrator",
    "ReqNodeNotAvail": "a node it requires is not available now (down, drained or reserved)",
    "Reservation": "waiting for its reservation to start",
    "Licenses": "waiting for licenses",
    # switch/nvidia_imex: every IMEX channel is held by running jobs (25.11+ makes the job wait;
    # 24.11 starts it without one). More channels: SwitchParameters=imex_channel_count
    "NvidiaImexChannels": "waiting for an IMEX channel: running jobs hold all of them",
    "NodeDown": "a node it needs is down",
    "PartitionDown": "its partition is down (an administrator brings it up)",
    "PartitionInactive": "its partition is inactive (an administrator activates it)",
    "BurstBufferResources": "waiting for burst buffer resources",
    "Cleaning": "the job is being requeued and still cleans up",
    "Prolog": "its prolog runs",
    "Scheduling": "not yet considered by the scheduler",
    "None": "not yet considered by the scheduler",
}


def pending_reason(code: str | None) -> PendingReason | None:
    """Slurm's reason for a pending job in words; None without one."""
    if not code:
        return None
    if code in _NEVER:
        return PendingReason(code, _NEVER[code], True)
    if code.endswith(_NEVER_SUFFIXES):
        return PendingReason(code, "it is over a per-job limit of its account or QOS", True)
    if code in _WAITING:
        return PendingReason(code, _WAITING[code], False)
    if code.startswith("ReqNodeNotAvail"):  # "ReqNodeNotAvail, UnavailableNodes:n[1-2]"
        return PendingReason(code, _WAITING["ReqNodeNotAvail"], False)
    if code.startswith(("Assoc", "QOS", "MaxCpu", "MaxNode", "MaxJob", "MaxMem")):
        return PendingReason(code, "waiting under a limit of its account or QOS", False)
    return PendingReason(code, "Slurm's reason (see squeue's REASON)", False)
