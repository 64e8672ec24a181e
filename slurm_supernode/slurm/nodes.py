"""Nodes and partitions (the records: slurm/nodeinfo.py), plus drain/resume.

Read from `scontrol show node|partition -o` (one record a line, works on 22.05 .. 24.11;
`--json` is not available for scontrol on 22.05).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from slurm_supernode.slurm.nodeinfo import (
    NodeInfo,
    PartitionInfo,
    node_from_record,
    partition_from_record,
)
from slurm_supernode.slurm.parse import parse_kv_records
from slurm_supernode.slurm.runner import run_slurm


def _hostlist(nodes: str | Iterable[str]) -> str:
    from slurm_supernode.hostlist import expand, fold

    return fold(expand(nodes) if isinstance(nodes, str) else nodes)


def node_infos(names: str | Iterable[str] | None = None) -> list[NodeInfo]:
    """All nodes, or those named (a hostlist like "n[0-3]" or an iterable of names); through
    pyslurm where it serves this Slurm (slurm/pyslurm_probe.py)."""
    from slurm_supernode.slurm import pyslurm_probe, pyslurm_queries

    cmd = ["scontrol", "show", "node", "-o"]
    if names is not None:
        hostlist = _hostlist(names)
        if not hostlist:
            return []
        cmd.append(hostlist)
    if (api := pyslurm_probe.pyslurm_api()) is not None:
        from slurm_supernode.hostlist import expand

        return pyslurm_queries.node_infos(api, None if names is None else expand(hostlist))
    out = run_slurm(cmd, timeout=30).stdout
    return [node_from_record(r) for r in parse_kv_records(out) if "NodeName" in r]


def partition_infos() -> list[PartitionInfo]:
    """Every partition the controller knows (through pyslurm where it serves this Slurm)."""
    from slurm_supernode.slurm import pyslurm_probe, pyslurm_queries

    if (api := pyslurm_probe.pyslurm_api()) is not None:
        return pyslurm_queries.partition_infos(api)
    out = run_slurm(["scontrol", "show", "partition", "-o"], timeout=30).stdout
    return [partition_from_record(r) for r in parse_kv_records(out) if "PartitionName" in r]


def drain(nodes: str | Iterable[str], reason: str) -> None:
    """Drain nodes: running jobs finish, no new job starts there. Slurm requires a reason."""
    if not reason.strip():
        raise ValueError("drain needs a non-empty reason")
    run_slurm(
        ["scontrol", "update", f"NodeName={_hostlist(nodes)}", "State=DRAIN", f"Reason={reason}"],
        timeout=30,
    )


def resume(nodes: str | Iterable[str], *, wait: float = 15.0, poll: float = 0.5) -> list[NodeInfo]:
    """Undo a drain (or a DOWN state) and return the nodes as they end up. Slurm refuses nodes
    that are neither drained nor down.

    Ends clean on every version: Slurm 24.11 shows a resumed node as IDLE+NOT_RESPONDING for
    about a second until slurmd re-registers, and keeps the drain reason on the idle node. So
    this waits (up to ``wait`` s) until the nodes respond again, then clears a reason left on a
    node that is no longer drained, down or failing (``Reason=" "``: an empty value is ignored).
    """
    hostlist = _hostlist(nodes)
    run_slurm(["scontrol", "update", f"NodeName={hostlist}", "State=RESUME"], timeout=30)
    deadline = time.monotonic() + wait
    infos = node_infos(hostlist)
    while any("not_responding" in n.flags for n in infos) and time.monotonic() < deadline:
        time.sleep(poll)
        infos = node_infos(hostlist)
    stale = [n.name for n in infos if n.reason and _is_up(n)]
    if stale:
        run_slurm(["scontrol", "update", f"NodeName={_hostlist(stale)}", "Reason= "], timeout=30)
        infos = node_infos(hostlist)
    return infos


def _is_up(node: NodeInfo) -> bool:
    """Responding and neither drained, down nor failing: a reason here is left over."""
    bad = {"drain", "not_responding", "fail", "failing"}
    return node.state not in ("down", "fail", "unknown") and not bad & set(node.flags)
