"""Placement data: the parallel layout and the rank map (which rank runs on which device).

Pure data. ``rankmap.build_rank_map`` fills it; the launch layer's per-node agent and
``snrun plan`` read it; ``to_json`` is the documented schema (docs/plan-schema.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, overload

# The order tokens (`--order`, Megatron-Core's ``order``): all five, innermost first.
DIMENSIONS = ("tp", "cp", "ep", "dp", "pp")
DEFAULT_ORDER = "tp-cp-ep-dp-pp"  # Megatron-LM's default: TP innermost, PP outermost
TP_PP_DP_ORDER = "tp-cp-ep-pp-dp"  # what Megatron-LM's --use-tp-pp-dp-mapping selects
FRAMEWORKS = ("megatron", "torchtitan")
DEFAULT_FRAMEWORK = "megatron"

# Two grids over the same ranks (Megatron-Core's two RankGenerators; torchtitan's meshes):
# the dense grid (attention, dense MLP) and the expert grid (MoE layers).
DENSE_DIMS = ("tp", "cp", "dp", "pp")
EXPERT_DIMS = ("etp", "ep", "edp", "pp")
# Every communication group a plan reports, in reporting order.
GROUP_DIMS = ("tp", "cp", "dp", "pp", "ep", "etp", "edp")
EXPERT_ONLY = frozenset({"ep", "etp", "edp", "efsdp"})  # dims that live on the expert grid only
# torchtitan's data-parallel mesh dims (HSDP): dp = dp_replicate x dp_shard (dp_replicate
# outermost), edp = dp_replicate x efsdp. They split dp and edp, so only torchtitan reports them.
HSDP_DIMS = ("dp_shard", "dp_replicate", "efsdp")


def group_dims(framework: str) -> tuple[str, ...]:
    """The group dimensions a plan reports for ``framework``, in reporting order."""
    return GROUP_DIMS + HSDP_DIMS if framework == "torchtitan" else GROUP_DIMS


@dataclass(frozen=True, slots=True)
class Layout:
    """Parallel sizes as the training framework reads them; ``order`` innermost first.

    ``dp`` is the dense data-parallel size W / (tp*cp*pp) and ``edp`` the expert one
    W / (etp*ep*pp): ``ep`` does not multiply into the world size, it is carved out of
    dp*cp (and tp when etp < tp), as in Megatron-Core and torchtitan. ``etp`` None means the
    framework's default (``expert_tp``). ``dp_replicate`` is torchtitan's HSDP replicate degree
    (``data_parallel_replicate_degree``): dp = dp_replicate * dp_shard; Megatron has none (1).
    Both derived sizes are filled in by ``checks.resolve_layout``.
    """

    tp: int = 1
    cp: int = 1
    ep: int = 1
    dp: int = 1
    pp: int = 1
    order: str = DEFAULT_ORDER
    etp: int | None = None
    edp: int = 1
    framework: str = DEFAULT_FRAMEWORK
    dp_replicate: int = 1

    @property
    def expert_tp(self) -> int:
        """etp as the framework uses it: Megatron defaults it to tp; torchtitan defaults it to
        1 and ignores it without EP (experts then follow tp)."""
        if self.framework == "torchtitan":
            if self.ep == 1:
                return self.tp
            return 1 if self.etp is None else self.etp
        return self.tp if self.etp is None else self.etp

    @property
    def dp_shard(self) -> int:
        """torchtitan's dp_shard: the sharded part of dp (dp = dp_replicate * dp_shard)."""
        return self.dp // self.dp_replicate

    @property
    def efsdp(self) -> int:
        """torchtitan's efsdp: the sharded part of edp (edp = dp_replicate * efsdp); with EP
        it is dp_shard*cp*tp/ep, without EP the experts shard like the dense weights
        (dp_shard*cp)."""
        return self.edp // self.dp_replicate

    def size(self, dim: str) -> int:
        if dim == "etp":
            return self.expert_tp
        return int(getattr(self, dim))

    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(self.order.split("-"))

    @property
    def world_size(self) -> int:
        return self.tp * self.cp * self.dp * self.pp

    def as_dict(self) -> dict[str, int | str]:
        out: dict[str, int | str] = {
            "framework": self.framework,
            "tp": self.tp,
            "cp": self.cp,
            "ep": self.ep,
            "etp": self.expert_tp,
            "dp": self.dp,
            "edp": self.edp,
            "pp": self.pp,
            "order": self.order,
        }
        if self.framework == "torchtitan":
            out |= {d: self.size(d) for d in HSDP_DIMS}
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Layout:
        """Inverse of ``as_dict`` (derived sizes are recomputed by ``resolve_layout``)."""
        return cls(
            tp=int(d.get("tp", 1)),
            cp=int(d.get("cp", 1)),
            ep=int(d.get("ep", 1)),
            pp=int(d.get("pp", 1)),
            order=str(d.get("order", DEFAULT_ORDER)),
            etp=None if d.get("etp") is None else int(d["etp"]),
            framework=str(d.get("framework", DEFAULT_FRAMEWORK)),
            dp_replicate=int(d.get("dp_replicate", 1)),
        )


class NodePlacement(NamedTuple):
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
    coords: dict[str, int]  # dense grid: tp, cp, dp, pp (torchtitan: dp_shard, dp_replicate)
    expert_coords: dict[str, int]  # expert grid: etp, ep, edp, pp (torchtitan: efsdp, ...)


# One grid dimension as the rank arithmetic needs it: (name, stride, size); coordinate of rank r
# = r // stride % size. Strides are mixed radix in grid order (the first dimension fastest).
GridDims = tuple[tuple[str, int, int], ...]


@dataclass(frozen=True, eq=False)
class RankList(Sequence[RankPlacement]):
    """The ranks of a map, made on access from the nodes and the grids: an immutable sequence.

    Why not a tuple of 100,000 RankPlacements: building them (two coordinate dicts each) was a
    third of ``snrun plan`` at 100k GPUs, and most readers need a few ranks or none. Rank r
    runs on node r // nproc, local rank r % nproc, device ``visible_devices[r % nproc]`` (nodes
    fill with consecutive ranks); its coordinates are the grids' mixed-radix digits of r.
    Compares equal to any sequence of the same RankPlacements (a tuple included).
    """

    nodes: tuple[NodePlacement, ...]
    nproc: int
    dense: GridDims
    expert: GridDims

    def __len__(self) -> int:
        return len(self.nodes) * self.nproc

    def _make(self, rank: int) -> RankPlacement:
        node = self.nodes[rank // self.nproc]
        local = rank % self.nproc
        return RankPlacement(
            rank,
            node.hostname,
            node.node_rank,
            local,
            node.visible_devices[local],
            node.supernode,
            {d: rank // s % n for d, s, n in self.dense},
            {d: rank // s % n for d, s, n in self.expert},
        )

    @overload
    def __getitem__(self, i: int) -> RankPlacement: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[RankPlacement, ...]: ...
    def __getitem__(self, i: int | slice) -> RankPlacement | tuple[RankPlacement, ...]:
        if isinstance(i, slice):
            return tuple(self._make(r) for r in range(*i.indices(len(self))))
        n = len(self)
        if not isinstance(i, int) or isinstance(i, bool):
            raise TypeError(f"rank index must be an int, not {type(i).__name__}")
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"rank {i} out of range (world size {n})")
        return self._make(i)

    def __iter__(self) -> Iterator[RankPlacement]:
        dense, expert, nproc = self.dense, self.expert, self.nproc
        rank = 0
        for node in self.nodes:
            host, nrank, sn, devs = (
                node.hostname,
                node.node_rank,
                node.supernode,
                node.visible_devices,
            )
            for local in range(nproc):
                yield RankPlacement(
                    rank,
                    host,
                    nrank,
                    local,
                    devs[local],
                    sn,
                    {d: rank // s % n for d, s, n in dense},
                    {d: rank // s % n for d, s, n in expert},
                )
                rank += 1

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RankList):
            return (self.nodes, self.nproc, self.dense, self.expert) == (
                other.nodes,
                other.nproc,
                other.dense,
                other.expert,
            ) or tuple(self) == tuple(other)
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    # unhashable: mutable-looking dict members, like a list
    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RankList({len(self)} ranks on {len(self.nodes)} nodes x {self.nproc})"


class Check(NamedTuple):
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
    ranks: Sequence[RankPlacement]  # in rank order (a RankList from build_rank_map)
    checks: tuple[Check, ...] = ()
    cost: dict[str, Any] | None = None  # filled by the planner when asked
    # per group dimension: how many groups stay in a node / super node / cross ("inter")
    spans: dict[str, dict[str, int]] = field(default_factory=dict, compare=False)
    # per group dimension: the fewest groups any contiguous layout has crossing super nodes
    # (lexicographic, placement/optimum.py; None: not computed), and how it was found ("lower
    # bound reached" / "exact search" / None); both empty for the baseline map
    crossing_min: dict[str, int | None] = field(default_factory=dict, compare=False)
    crossing_min_by: dict[str, str | None] = field(default_factory=dict, compare=False)
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
