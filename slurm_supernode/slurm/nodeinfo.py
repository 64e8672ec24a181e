"""A node and a partition as typed records, and how `scontrol show node|partition -o` text
becomes one (the pyslurm backend builds the same records through these readers)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from slurm_supernode.slurm.parse import null, to_int

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


def node_from_record(rec: dict[str, str]) -> NodeInfo:
    """A parsed `scontrol show node -o` record -> NodeInfo."""
    state, *flags = (rec.get("State") or "UNKNOWN").lower().split("+")
    state = state.rstrip("*~#!%$@^-")
    features = null(rec.get("ActiveFeatures")) or null(rec.get("AvailableFeatures")) or ""
    # a blank reason is none: `Reason= ` (how `resume` clears one) leaves " " on 25.11
    reason = null((rec.get("Reason") or "").strip())
    if reason:
        reason = _REASON_STAMP.sub("", reason).strip() or None
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
