"""pyslurm's objects -> the layer's records (JobInfo, NodeInfo, PartitionInfo).

Plain functions over the attributes pyslurm 25.11 documents (`pyslurm.Job`, `Node`,
`Partition`), so the command line and pyslurm give the same typed records. Nodes and
partitions go through the text path's own record readers (same state split, reason and
feature rules). Where pyslurm hands over less than the text does, the record says the same:
- a job's `state` is Slurm's `job_state_string`: the flag while one is set (`COMPLETING`,
  `REQUEUED`), like `scontrol show job` text; data_parser's JSON lists the base state first;
- a node's GRES is pyslurm's parsed dict written back (`gpu:8`, `gpu:a100:4`): the socket
  binding of `gpu:8(S:0-1)` is not kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from slurm_supernode.slurm.jobinfo import JobInfo, allocation_nodes
from slurm_supernode.slurm.nodeinfo import (
    NodeInfo,
    PartitionInfo,
    node_from_record,
    partition_from_record,
)
from slurm_supernode.slurm.parse import null
from slurm_supernode.slurm.reasons import job_reason
from slurm_supernode.slurm.state import JobState


def _text(value: object) -> str | None:
    return null(value) if isinstance(value, str) else None


def _time(value: object) -> datetime | None:
    """pyslurm's raw times: epoch seconds, None (or 0) for none -> naive local datetime."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return datetime.fromtimestamp(value)


def _int(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def job_from_pyslurm(job: Any) -> JobInfo:
    """A `pyslurm.Job` -> JobInfo (source "pyslurm")."""
    derived = getattr(job, "derived_exit_code", None)
    restarts = getattr(job, "requeue_count", None)
    state = JobState.from_text(_text(job.state))  # one word: a flag hides the base
    return JobInfo(
        job_id=_int(job.id),
        name=_text(job.name) or "",
        state=state,
        reason=job_reason(_text(job.state_reason), _int(job.exit_code_signal)),
        exit_code=_int(job.exit_code),
        exit_signal=_int(job.exit_code_signal),
        derived_exit_code=derived if isinstance(derived, int) else None,
        nodelist=allocation_nodes(state, _text(job.allocated_nodes)),
        num_nodes=_int(job.num_nodes),
        restart_count=restarts if isinstance(restarts, int) else None,
        partition=_text(job.partition),
        start_time=_time(job.start_time),
        end_time=_time(job.end_time),
        work_dir=_text(job.working_directory),
        stdout=_text(job.standard_output),
        source="pyslurm",
        het_job_id=_int(getattr(job, "het_job_id", None)) or None,
    )


def gres_text(gres: object) -> str | None:
    """pyslurm's GRES dict (`{"gpu": 8}`, `{"gpu:a100": 4}`, `{"gpu": {"count": 2, ...}}`)
    -> Slurm's spelling `gpu:8,gpu:a100:4`; None when there is none."""
    if isinstance(gres, str):
        return null(gres)
    if not isinstance(gres, Mapping) or not gres:
        return None
    parts = []
    for name, count in gres.items():
        if isinstance(count, Mapping):
            count = count.get("count")
        parts.append(f"{name}:{count}")
    return ",".join(parts)


def _join(values: object) -> str:
    if isinstance(values, str):
        return values
    if not isinstance(values, Iterable):
        return ""
    return ",".join(str(v) for v in values)


def node_from_pyslurm(node: Any) -> NodeInfo:
    """A `pyslurm.Node` -> NodeInfo, through the text path's record reader."""
    rec = {
        "NodeName": node.name,
        "State": node.state or "UNKNOWN",
        "ActiveFeatures": _join(node.active_features),
        "AvailableFeatures": _join(node.available_features),
        "Reason": node.reason or "",
        "Partitions": _join(node.partitions),
        "Gres": gres_text(node.configured_gres) or "",
        "CPUTot": str(_int(node.total_cpus)),
    }
    return node_from_record(rec)


def partition_from_pyslurm(part: Any) -> PartitionInfo:
    """A `pyslurm.Partition` -> PartitionInfo, through the text path's record reader
    (pyslurm says "UNLIMITED" or None where the text says `MaxNodes=UNLIMITED`)."""
    max_nodes = part.max_nodes
    rec = {
        "PartitionName": part.name,
        "Nodes": _join(part.nodes) if part.nodes else "",
        "TotalNodes": str(_int(part.total_nodes)),
        "MaxNodes": str(max_nodes) if isinstance(max_nodes, int) else "UNLIMITED",
        "Default": "YES" if part.is_default else "NO",
        "State": part.state or "UNKNOWN",
    }
    return partition_from_record(rec)
