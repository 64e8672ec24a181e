"""Build the rank map: which global rank runs on which node and device, with its coordinates.

Why a pure function: the per-node agent calls ``build_rank_map`` inside the job with
``SLURM_JOB_NODELIST``; every node must derive the *same* map without talking to the others,
so the result depends only on the site, the host set and the layout (never on host order,
the environment or the clock). It stays cheap (no torch, plain integer arithmetic) because it
runs on a login node for ``snrun plan`` on 100,000-GPU sites too.

Placement rules: nodes in the site's physical order (super node ordinal, then node index), node
rank = position in that order; a node's devices in ``spec.device_order`` (island by island), so
adjacent ranks - the innermost layout dimension, TP by default - share the fastest links.
"""

from __future__ import annotations

from collections.abc import Sequence

from slurm_supernode.errors import InputError, PlacementError
from slurm_supernode.placement.model import (
    DIMENSIONS,
    Layout,
    NodePlacement,
    RankMap,
    RankPlacement,
)
from slurm_supernode.site.model import Node, Site


def parse_hosts(hosts: Sequence[str] | str) -> list[str]:
    """Expand a Slurm hostlist (``n[0-7],m1``) or pass a sequence through; reject duplicates.

    Slurm hostlist syntax only, through the project's hostlist wrapper: ClusterShell's set
    operators (``n[0-3]&n[2-5]``) and ``@group`` look-ups are refused, because Slurm never
    writes them into ``SLURM_JOB_NODELIST`` and a group resolver may run site commands.
    """
    if isinstance(hosts, str):
        from slurm_supernode.hostlist import HostlistError, expand

        try:
            names = expand(hosts)
        except HostlistError as exc:
            raise InputError(
                f"bad hostlist {hosts!r}: {exc}",
                where="--nodelist",
                hint="Slurm hostlist syntax only, e.g. 'n[0-7],m1' (no set operators, no @groups)",
            ) from None
    else:
        names = [str(h) for h in hosts]
    if len(set(names)) != len(names):
        seen: set[str] = set()
        dups = sorted({h for h in names if h in seen or seen.add(h)})
        raise PlacementError(f"duplicate hosts in the allocation: {_fold(dups)}", where="nodelist")
    if not names:
        raise PlacementError("the allocation has no hosts", where="nodelist")
    return names


def _fold(names: Sequence[str], limit: int = 200) -> str:
    from slurm_supernode.hostlist import fold

    text = fold(names)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_order(order: str) -> tuple[str, ...]:
    """Validate ``order``: a permutation of tp, cp, ep, dp, pp joined by '-', innermost first."""
    dims = tuple(order.split("-"))
    if sorted(dims) != sorted(DIMENSIONS):
        raise PlacementError(
            f"order {order!r} is not a permutation of {'-'.join(DIMENSIONS)}",
            where="--order",
            hint="list all five dimensions once, innermost first, e.g. tp-cp-ep-dp-pp",
        )
    return dims


def dim_strides(layout: Layout) -> dict[str, int]:
    """Rank distance between neighbours of each dimension (mixed radix, first in order fastest)."""
    strides: dict[str, int] = {}
    step = 1
    for dim in parse_order(layout.order):
        strides[dim] = step
        step *= layout.size(dim)
    return strides


def coords_of(rank: int, layout: Layout) -> dict[str, int]:
    """Coordinates of one rank in the layout (same arithmetic as the full map)."""
    out: dict[str, int] = {}
    rest = rank
    for dim in parse_order(layout.order):
        rest, out[dim] = divmod(rest, layout.size(dim))
    return {d: out[d] for d in DIMENSIONS}


def order_nodes(site: Site, names: list[str], physical: bool) -> list[Node]:
    unknown = [h for h in names if not site.has_node(h)]
    if unknown:
        raise PlacementError(
            f"hosts not in site {site.name!r}: {_fold(unknown)}",
            where="nodelist",
            hint="check --site, or add the nodes to the site config",
        )
    # physical: super node ordinal, then node index. Otherwise Slurm's plain hostname order
    # (natural sort), the baseline a topology-blind launcher would use.
    if physical:
        names = sorted(names, key=site.physical_position)
    else:
        from slurm_supernode.hostlist import expand, fold

        names = expand(fold(names))
    return [site.node(h) for h in names]


def resolve_nproc(nodes: list[Node], nproc_per_node: int | None) -> int:
    counts = sorted({n.devices for n in nodes})
    if nproc_per_node is None:
        if len(counts) != 1:
            raise PlacementError(
                f"nodes have different device counts ({', '.join(map(str, counts))})",
                where="--nproc-per-node",
                hint=f"give --nproc-per-node (at most {counts[0]})",
            )
        return counts[0]
    if nproc_per_node < 1 or nproc_per_node > counts[0]:
        raise PlacementError(
            f"nproc_per_node={nproc_per_node} is outside 1..{counts[0]} (devices per node)",
            where="--nproc-per-node",
        )
    return nproc_per_node


def build_rank_map(
    site: Site,
    hosts: Sequence[str] | str,
    layout: Layout | None = None,
    nproc_per_node: int | None = None,
    *,
    physical: bool = True,
) -> RankMap:
    """The rank map of ``layout`` on ``hosts`` (any order), with its checks.

    ``physical=False`` builds the baseline a plain launcher would use (Slurm's hostname order,
    devices 0..n-1 ignoring device groups); the planner compares both.
    Raises PlacementError for unknown hosts and infeasible layouts (with nearest feasible ones).
    """
    from slurm_supernode.placement import checks  # local: checks imports this module

    names = parse_hosts(hosts)
    nodes = order_nodes(site, names, physical)
    nproc = resolve_nproc(nodes, nproc_per_node)
    world = len(nodes) * nproc
    layout = checks.resolve_layout(layout or Layout(), world, nproc)

    placements = []
    for i, node in enumerate(nodes):
        order = node.spec.device_order if physical else tuple(range(node.devices))
        placements.append(NodePlacement(node.hostname, i, node.supernode, order[:nproc]))

    ranks = _place_ranks(placements, layout, nproc)
    rm = RankMap(layout=layout, nproc_per_node=nproc, nodes=tuple(placements), ranks=ranks)
    found = checks.run_checks(rm, site)
    checks.raise_on_hard_failures(found, rm, site)
    return RankMap(layout=layout, nproc_per_node=nproc, nodes=rm.nodes, ranks=ranks, checks=found)


def _place_ranks(
    nodes: list[NodePlacement], layout: Layout, nproc: int
) -> tuple[RankPlacement, ...]:
    """The hot path (100k ranks): one pass, integer arithmetic, one small dict per rank."""
    strides = dim_strides(layout)
    s_tp, s_cp, s_ep, s_dp, s_pp = (strides[d] for d in DIMENSIONS)
    n_tp, n_cp, n_ep, n_dp, n_pp = (layout.size(d) for d in DIMENSIONS)
    out = []
    append = out.append
    rank = 0
    for node in nodes:
        host, nrank, sn, devs = node.hostname, node.node_rank, node.supernode, node.visible_devices
        for local in range(nproc):
            coords = {
                "tp": rank // s_tp % n_tp,
                "cp": rank // s_cp % n_cp,
                "ep": rank // s_ep % n_ep,
                "dp": rank // s_dp % n_dp,
                "pp": rank // s_pp % n_pp,
            }
            append(RankPlacement(rank, host, nrank, local, devs[local], sn, coords))
            rank += 1
    return tuple(out)


def group_ranks(rm: RankMap, dim: str) -> list[list[int]]:
    """The communication groups of one dimension, each in rank order, groups by first rank."""
    if dim not in DIMENSIONS:
        raise InputError(f"unknown dimension {dim!r}; one of {', '.join(DIMENSIONS)}")
    size = rm.layout.size(dim)
    stride = dim_strides(rm.layout)[dim]
    world = rm.world_size
    return [
        list(range(base, base + size * stride, stride))
        for base in range(world)
        if (base // stride) % size == 0
    ]


def rank_map_to_json(rm: RankMap, *, ranks: bool = True) -> dict:
    """The documented JSON form (docs/plan-schema.md); ``ranks=False`` leaves the rank list out."""
    out: dict = {
        "schema": 1,
        "world_size": rm.world_size,
        "nproc_per_node": rm.nproc_per_node,
        "layout": rm.layout.as_dict(),
        "nodes": [
            {
                "hostname": n.hostname,
                "node_rank": n.node_rank,
                "supernode": n.supernode,
                "visible_devices": list(n.visible_devices),
            }
            for n in rm.nodes
        ],
        "ranks": None,
        "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in rm.checks],
        "cost": rm.cost,
    }
    if ranks:
        out["ranks"] = [
            {
                "rank": r.rank,
                "hostname": r.hostname,
                "node_rank": r.node_rank,
                "local_rank": r.local_rank,
                "device": r.device,
                "supernode": r.supernode,
                "coords": r.coords,
            }
            for r in rm.ranks
        ]
    return out
