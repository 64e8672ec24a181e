"""Nodes and partitions as typed records, plus drain/resume.

Read from `scontrol show node|partition -o` (one record a line, works on 22.05 .. 24.11;
`--json` is not available for scontrol on 22.05).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass

from slurm_supernode.slurm.parse import null, parse_kv_records, to_int
from slurm_supernode.slurm.runner import run_slurm

# Node reasons end with " [user@time]" (who set it, when): not part of the reason's text.
_REASON_STAMP = re.compile(r"\s*\[[^\[\]]*@[^\[\]]*\]\s*$")


@dataclass(frozen=True)
class NodeInfo:
    """One node: `state` is the base state lowercased ("idle", "mixed", "allocated", "down"),
    `flags` the rest of Slurm's `IDLE+DRAIN+NOT_RESPONDING` lowercased ("drain", ...)."""

    name: str
    state: str
    flags: tuple[str, ...]
    features: tuple[str, ...]
    reason: str | None
    partitions: tuple[str, ...]
    gres: str | None
    cpus: int

    @property
    def drained(self) -> bool:
        """Drain requested (DRAINING while jobs finish, DRAINED after)."""
        return "drain" in self.flags

    @property
    def usable(self) -> bool:
        """Can take new jobs: up, responding, not drained."""
        bad = {"drain", "not_responding", "fail", "maint", "reboot_requested", "power_down"}
        return self.state not in ("down", "future", "unknown") and not bad & set(self.flags)


@dataclass(frozen=True)
class PartitionInfo:
    """One partition: `nodes` is Slurm's hostlist ("n[0-7]"), `max_nodes` None = unlimited."""

    name: str
    nodes: str
    total_nodes: int
    max_nodes: int | None
    default: bool
    state: str


def _hostlist(nodes: str | Iterable[str]) -> str:
    from slurm_supernode.hostlist import expand, fold

    return fold(expand(nodes) if isinstance(nodes, str) else nodes)


def node_from_record(rec: dict[str, str]) -> NodeInfo:
    """A parsed `scontrol show node -o` record -> NodeInfo."""
    state, *flags = (rec.get("State") or "UNKNOWN").lower().split("+")
    state = state.rstrip("*~#!%$@^-")
    features = null(rec.get("ActiveFeatures")) or null(rec.get("AvailableFeatures")) or ""
    reason = null(rec.get("Reason"))
    if reason:
        reason = _REASON_STAMP.sub("", reason) or None
    return NodeInfo(
        name=rec["NodeName"],
        state=state,
        flags=tuple(flags),
        features=tuple(f for f in features.split(",") if f),
        reason=reason,
        partitions=tuple(p for p in (null(rec.get("Partitions")) or "").split(",") if p),
        gres=null(rec.get("Gres")),
        cpus=to_int(rec.get("CPUTot")),
    )


def partition_from_record(rec: dict[str, str]) -> PartitionInfo:
    """A parsed `scontrol show partition -o` record -> PartitionInfo."""
    max_nodes = rec.get("MaxNodes", "UNLIMITED")
    return PartitionInfo(
        name=rec["PartitionName"],
        nodes=null(rec.get("Nodes")) or "",
        total_nodes=to_int(rec.get("TotalNodes")),
        max_nodes=int(max_nodes) if max_nodes.isdigit() else None,
        default=rec.get("Default", "NO").upper() == "YES",
        state=rec.get("State", "UNKNOWN").lower(),
    )


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
