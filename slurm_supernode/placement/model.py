"""Placement data: the parallel layout and the rank map (which rank runs on which device).

Pure data. ``rankmap.build_rank_map`` fills it; the launch layer's per-node agent and
``snrun plan`` read it; ``to_json`` is the documented schema (docs/plan-schema.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

DIMENSIONS = ("tp", "cp", "ep", "dp", "pp")
DEFAULT_ORDER = "tp-cp-ep-dp-pp"  # Megatron-LM: TP innermost (adjacent ranks), PP outermost


@dataclass(frozen=True, slots=True)
class Layout:
    """Sizes of the parallel dimensions; ``order`` lists them innermost first."""

    tp: int = 1
    cp: int = 1
    ep: int = 1
    dp: int = 1
    pp: int = 1
    order: str = DEFAULT_ORDER

    def size(self, dim: str) -> int:
        return int(getattr(self, dim))

    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(self.order.split("-"))

    @property
    def world_size(self) -> int:
        return self.tp * self.cp * self.ep * self.dp * self.pp

    def as_dict(self) -> dict[str, int | str]:
        return {d: self.size(d) for d in DIMENSIONS} | {"order": self.order}


@dataclass(frozen=True, slots=True)
class NodePlacement:
    """One node of the allocation: its node rank and the device order its ranks use."""

    hostname: str
    node_rank: int
    supernode: str
    visible_devices: tuple[int, ...]  # CUDA_VISIBLE_DEVICES / ASCEND_RT_VISIBLE_DEVICES order


@dataclass(frozen=True, slots=True)
class RankPlacement:
    """One global rank: where it runs and its coordinates in the layout."""

    rank: int
    hostname: str
    node_rank: int
    local_rank: int
    device: int  # physical device id on the node
    supernode: str
    coords: dict[str, int]  # tp, cp, ep, dp, pp


@dataclass(frozen=True, slots=True)
class Check:
    """One guarantee that was checked, with what was found."""

    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class RankMap:
    """The whole placement; identical on every node for the same inputs."""

    layout: Layout
    nproc_per_node: int
    nodes: tuple[NodePlacement, ...]  # in node-rank order (physical order)
    ranks: tuple[RankPlacement, ...]  # in rank order
    checks: tuple[Check, ...] = ()
    cost: dict | None = None  # filled by the planner when asked
    _by_host: dict[str, NodePlacement] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_host", {n.hostname: n for n in self.nodes})

    @property
    def world_size(self) -> int:
        return len(self.ranks)

    def node(self, hostname: str) -> NodePlacement:
        return self._by_host[hostname]

    @property
    def master(self) -> NodePlacement:
        return self.nodes[0]
