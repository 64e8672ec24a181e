"""The controller queries snrun makes most, through pyslurm: one job, all jobs, nodes,
partitions. Same records and the same SlurmErrorKinds as the command-line path.

One RPC instead of a process each (`scontrol show job --json` 13-15 ms, `pyslurm.Job.load`
4-6 ms, measured in docs/benchmarks.md). Submission, cancel, update and requeue stay on the
command line (docs/pyslurm.md says why). pyslurm raises `RPCError` with Slurm's errno: the
errno decides the kind where it is one of Slurm's well-known ones, else Slurm's message is read
like a command's stderr (`runner.stderr_kind`, the one reader of Slurm's texts).
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType

from slurm_supernode.errors import SlurmError, SlurmErrorKind
from slurm_supernode.slurm.jobinfo import JobInfo
from slurm_supernode.slurm.nodeinfo import NodeInfo, PartitionInfo
from slurm_supernode.slurm.pyslurm_records import (
    job_from_pyslurm,
    node_from_pyslurm,
    partition_from_pyslurm,
)
from slurm_supernode.slurm.runner import stderr_kind

# slurm_errno.h (stable across releases): errno -> kind
ERRNO_KINDS: dict[int, SlurmErrorKind] = {
    11: SlurmErrorKind.BUSY,  # EAGAIN
    1001: SlurmErrorKind.UNREACHABLE,  # SLURM_COMMUNICATIONS_CONNECTION_ERROR
    1002: SlurmErrorKind.UNREACHABLE,  # ..._SEND_ERROR
    1003: SlurmErrorKind.UNREACHABLE,  # ..._RECEIVE_ERROR
    1004: SlurmErrorKind.UNREACHABLE,  # ..._SHUTDOWN_ERROR
    1800: SlurmErrorKind.UNREACHABLE,  # SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR
    1801: SlurmErrorKind.UNREACHABLE,
    1802: SlurmErrorKind.UNREACHABLE,
    1803: SlurmErrorKind.UNREACHABLE,
    1804: SlurmErrorKind.BUSY,  # SLURMCTLD_COMMUNICATIONS_BACKOFF
    1805: SlurmErrorKind.BUSY,  # SLURMCTLD_COMMUNICATIONS_HARD_DROP
    2000: SlurmErrorKind.NOT_FOUND,  # ESLURM_INVALID_PARTITION_NAME
    2017: SlurmErrorKind.NOT_FOUND,  # ESLURM_INVALID_JOB_ID
    2018: SlurmErrorKind.NOT_FOUND,  # ESLURM_INVALID_NODE_NAME
    2021: SlurmErrorKind.ENDED,  # ESLURM_ALREADY_DONE
    5004: SlurmErrorKind.TIMEOUT,  # SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT
    5005: SlurmErrorKind.UNREACHABLE,  # SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT
}

_CONTROLLER_HINT = "is slurmctld running? check 'scontrol ping'"


def error_kind(exc: BaseException) -> SlurmErrorKind:
    """The kind of a pyslurm error: by Slurm's errno, else by its message."""
    errno = getattr(exc, "errno", None)
    if isinstance(errno, int) and errno in ERRNO_KINDS:
        return ERRNO_KINDS[errno]
    return stderr_kind(str(getattr(exc, "msg", None) or exc))


def as_slurm_error(exc: BaseException, what: str) -> SlurmError:
    """A pyslurm failure as the layer's one-line SlurmError."""
    kind = error_kind(exc)
    text = str(getattr(exc, "msg", None) or exc).strip() or type(exc).__name__
    hint = (
        _CONTROLLER_HINT if kind in (SlurmErrorKind.UNREACHABLE, SlurmErrorKind.TIMEOUT) else None
    )
    return SlurmError(f"pyslurm {what} failed: {text}", kind=kind, hint=hint)


def _is_pyslurm_error(api: ModuleType, exc: BaseException) -> bool:
    base = getattr(api, "PyslurmError", None)
    return isinstance(base, type) and isinstance(exc, base)


def controller_jobs(api: ModuleType, job_id: int | None = None) -> list[JobInfo]:
    """What the controller knows: one job or all; [] when it does not know the job."""
    try:
        if job_id is not None:
            return [job_from_pyslurm(api.Job.load(job_id))]
        return [job_from_pyslurm(job) for job in api.Jobs.load().values()]
    except Exception as exc:
        if not _is_pyslurm_error(api, exc):
            raise
        err = as_slurm_error(exc, "Job.load" if job_id is not None else "Jobs.load")
        if err.kind is SlurmErrorKind.NOT_FOUND:
            return []
        raise err from None


def node_infos(api: ModuleType, names: Iterable[str] | None = None) -> list[NodeInfo]:
    """All nodes, or those named (expanded names), in the controller's order."""
    try:
        loaded = api.Nodes.load()
    except Exception as exc:
        if not _is_pyslurm_error(api, exc):
            raise
        raise as_slurm_error(exc, "Nodes.load") from None
    infos = [node_from_pyslurm(node) for node in loaded.values()]
    if names is None:
        return infos
    wanted = set(names)
    unknown = sorted(wanted - {n.name for n in infos})
    if unknown:  # as `scontrol show node X` does for a name it does not know
        raise SlurmError(
            f"pyslurm Nodes.load: no node named {','.join(unknown)}",
            kind=SlurmErrorKind.NOT_FOUND,
        )
    return [n for n in infos if n.name in wanted]


def partition_infos(api: ModuleType) -> list[PartitionInfo]:
    """Every partition the controller knows."""
    try:
        loaded = api.Partitions.load()
    except Exception as exc:
        if not _is_pyslurm_error(api, exc):
            raise
        raise as_slurm_error(exc, "Partitions.load") from None
    return [partition_from_pyslurm(part) for part in loaded.values()]
