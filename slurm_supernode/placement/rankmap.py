"""Build the rank map: which global rank runs on which node and device, with its coordinates.

Why a pure function: the per-node agent calls ``build_rank_map`` inside the job with
``SLURM_JOB_NODELIST``; every node must derive the *same* map without talking to the others,
so the result depends only on the site, the host set and the layout (never on host order,
the environment or the clock). It stays cheap (no torch, plain integer arithmetic) because it
runs on a login node for ``snrun plan`` on 100,000-GPU sites too.

Placement rules: nodes in the site's physical order (super node ordinal, then node index), node
rank = position in that order; a node's devices in ``spec.device_order`` (island by island), so
adjacent ranks share the fastest links. The groups are the framework's (``layout.py``): both
Megatron orders and torchtitan put TP/ETP innermost, then CP and EP, then DP/EDP, then PP (PP
before DP with ``--use-tp-pp-dp-mapping``), so filling nodes with consecutive ranks keeps the
innermost groups on the fastest links.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from slurm_supernode.errors import InputError, PlacementError
from slurm_supernode.placement import checks
from slurm_supernode.placement import layout as grids
from slurm_supernode.placement.model import (
    Layout,
    NodePlacement,
    RankList,
    RankMap,
    group_dims,
)
from slurm_supernode.site.model import Node, NodeSpec, Site

if TYPE_CHECKING:  # imported where used (the planner's lazy paths)
    from slurm_supernode.placement.optimum import Minimum
    from slurm_supernode.placement.packing import Line


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
        dups = sorted(h for h, times in Counter(names).items() if times > 1)
        raise PlacementError(f"duplicate hosts in the allocation: {_fold(dups)}", where="nodelist")
    if not names:
        raise PlacementError("the allocation has no hosts", where="nodelist")
    return names


def _fold(names: Sequence[str], limit: int = 200) -> str:
    from slurm_supernode.hostlist import fold

    text = fold(names)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def coords_of(rank: int, layout: Layout) -> dict[str, int]:
    """Dense-grid coordinates (tp, cp, dp, pp; torchtitan: dp_shard, dp_replicate too) of one
    rank (same arithmetic as the full map)."""
    return grids.coords(rank, layout, "dense")


def expert_coords_of(rank: int, layout: Layout) -> dict[str, int]:
    """Expert-grid coordinates (etp, ep, edp, pp; torchtitan: efsdp, dp_replicate too)."""
    return grids.coords(rank, layout, "expert")


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


# Which groups the packing keeps inside super nodes first: by the bytes they move (TP and
# expert TP, then EP and CP, then DP and expert DP, then PP). docs/planner.md.
PACK_PRIORITY = ("tp", "etp", "ep", "cp", "dp", "edp", "pp")
# torchtitan (HSDP): the sharded parts of dp / edp gather and scatter whole parameters every
# step, the replicas only all-reduce a 1/dp_shard slice: dp_shard and efsdp go before dp and
# edp (with dp_replicate = 1 they are the same groups, and the order is PACK_PRIORITY's);
# dp_replicate last, so the plan prints its minimum too
HSDP_PACK_PRIORITY = (
    "tp",
    "etp",
    "ep",
    "cp",
    "dp_shard",
    "efsdp",
    "dp",
    "edp",
    "pp",
    "dp_replicate",
)


def pack_priority(layout: Layout) -> tuple[str, ...]:
    """The packing's dimension order for ``layout``'s framework."""
    return HSDP_PACK_PRIORITY if layout.framework == "torchtitan" else PACK_PRIORITY


def pack_lines(layout: Layout) -> list[Line]:
    """The layout's group dimensions as packing lines, in ``pack_priority`` order."""
    from slurm_supernode.placement.packing import Line

    strides = grids.all_strides(layout)
    return [Line(d, layout.size(d), strides[d]) for d in pack_priority(layout)]


def supernode_capacities(nodes: list[Node]) -> tuple[list[str], list[int]]:
    """Super nodes in the order their nodes come (physical order) and their node counts."""
    names: list[str] = []
    counts: dict[str, int] = {}
    for n in nodes:
        if n.supernode not in counts:
            names.append(n.supernode)
            counts[n.supernode] = 0
        counts[n.supernode] += 1
    return names, [counts[sn] for sn in names]


def pack_nodes(nodes: list[Node], layout: Layout, nproc: int) -> list[Node]:
    """Nodes in node-rank order by the packing alone (no exact search): for the planner's
    search over many layouts; ``build_rank_map`` also searches (``packed_nodes``)."""
    return packed_nodes(nodes, layout, nproc, exact=False)[0]


def packed_nodes(
    nodes: list[Node], layout: Layout, nproc: int, *, exact: bool = True
) -> tuple[list[Node], Minimum]:
    """Nodes in node-rank order, and the minimum crossings they are judged against.

    ``nodes`` in physical order. The packing (placement/packing.py) says which super node
    each node rank goes to; each super node's nodes take its node ranks in physical order.
    Returns (nodes, ``optimum.Minimum``).
    """
    from slurm_supernode.placement.packing import place

    names, caps = supernode_capacities(nodes)
    slot_sn, best = place(pack_lines(layout), nproc, caps, exact=exact)
    if len(names) < 2:
        return nodes, best
    queues: dict[str, list[Node]] = {sn: [] for sn in names}
    for n in nodes:
        queues[n.supernode].append(n)
    taken = {sn: 0 for sn in names}
    out: list[Node] = []
    for k in slot_sn:
        sn = names[k]
        out.append(queues[sn][taken[sn]])
        taken[sn] += 1
    return out, best


def choose_devices(spec: NodeSpec, nproc: int, block: int) -> tuple[int, ...]:
    """The ``nproc`` devices a node's ranks use, in local-rank order.

    All devices: island by island, the islands whose size is a multiple of the block first.
    Fewer: the smallest island that holds them all (a whole
    island fits), else whole blocks of ``block`` adjacent ranks (TP) from the largest islands
    first, then what is left in island order. Why: taking devices 0..n-1 splits TP groups
    across islands of uneven size even where one island would hold them.
    """
    order = spec.device_order
    islands = spec.device_groups
    if nproc >= len(order):
        # islands that hold whole blocks first, so each starts on a block boundary: with
        # islands of 3, 2 and 3 devices and tp=2, 1 TP group crosses instead of 2
        b = max(1, min(block, nproc))
        ordered = [g for g in islands if len(g) % b == 0] + [g for g in islands if len(g) % b]
        return tuple(d for g in ordered for d in g)[:nproc]
    fit = [g for g in islands if len(g) >= nproc]
    if fit:
        return tuple(min(fit, key=len)[:nproc])
    chosen: list[int] = []
    block = max(1, min(block, nproc))
    for g in sorted(islands, key=len, reverse=True):
        want = min(len(g), nproc - len(chosen)) // block * block
        chosen += g[:want]
    chosen += [d for d in order if d not in chosen][: nproc - len(chosen)]
    return tuple(chosen)


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
    names = parse_hosts(hosts)
    nodes = order_nodes(site, names, physical)
    nproc = resolve_nproc(nodes, nproc_per_node)
    world = len(nodes) * nproc
    layout = checks.resolve_layout(layout or Layout(), world, nproc)

    placements = []
    best = None
    if physical:
        nodes, best = packed_nodes(nodes, layout, nproc)
    block = layout.tp if layout.tp <= nproc else nproc
    chosen: dict[int, tuple[int, ...]] = {}  # by id(spec): nodes of one kind share their spec
    for i, node in enumerate(nodes):
        if physical:
            devs = chosen.get(id(node.spec))
            if devs is None:
                devs = chosen[id(node.spec)] = choose_devices(node.spec, nproc, block)
        else:
            devs = tuple(range(node.devices))[:nproc]
        placements.append(NodePlacement(node.hostname, i, node.supernode, devs))

    ranks = rank_list(tuple(placements), layout, nproc)
    rm = RankMap(layout=layout, nproc_per_node=nproc, nodes=ranks.nodes, ranks=ranks)
    spans = checks.all_spans(rm)
    found = checks.run_checks(rm, site, spans)
    checks.raise_on_hard_failures(found, rm, site)
    return RankMap(
        layout=layout,
        nproc_per_node=nproc,
        nodes=rm.nodes,
        ranks=ranks,
        checks=found,
        spans={d: dict(spans[d]) for d in group_dims(layout.framework)},
        crossing_min=best.per_dim if best else {},
        crossing_min_by=best.method if best else {},
    )


def rank_list(nodes: tuple[NodePlacement, ...], layout: Layout, nproc: int) -> RankList:
    """The ranks on ``nodes`` (node-rank order), consecutive ranks filling each node.

    Coordinates: each grid's dimensions, then torchtitan's HSDP parts of dp / edp."""
    dense = tuple((d, s, n) for d, (n, s) in grids.dim_shapes(layout, "dense").items())
    expert = tuple((d, s, n) for d, (n, s) in grids.dim_shapes(layout, "expert").items())
    return RankList(nodes, nproc, dense, expert)


def group_ranks(rm: RankMap, dim: str) -> list[list[int]]:
    """The framework's groups of one dimension ('tp', 'ep', ...) or several ('dp-cp').

    Each group in member order (the grid's first dimension fastest), groups by first rank:
    the lists Megatron-Core's ``RankGenerator.get_ranks`` returns, for ``new_group()``.
    """
    known = group_dims(rm.layout.framework)
    for name in dim.split("-"):
        if name not in known:
            raise InputError(f"unknown dimension {name!r}; one of {', '.join(known)}")
    return grids.groups(rm.layout, dim, rm.world_size)


def rank_map_to_json(rm: RankMap, *, ranks: bool = True, nodes: bool = True) -> dict[str, Any]:
    """The documented JSON form (docs/plan-schema.md); ``ranks=False`` / ``nodes=False`` leave
    the rank / node list out (None in its place: the fast writer fills it in)."""
    out: dict[str, Any] = {
        "schema": 2,
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
        ]
        if nodes
        else None,
        "groups": _groups_json(rm),
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
                "expert_coords": r.expert_coords,
            }
            for r in rm.ranks
        ]
    return out


def _crossings(rm: RankMap, dim: str) -> dict[str, int | str | None]:
    """Groups crossing a node / a super-node boundary, and the fewest any layout reaches."""
    spans = rm.spans.get(dim, {})
    return {
        "node": spans.get("supernode", 0) + spans.get("inter", 0),
        "supernode": spans.get("inter", 0),
        "supernode_min": rm.crossing_min.get(dim),
        "supernode_min_by": rm.crossing_min_by.get(dim),
    }


def _groups_json(rm: RankMap) -> dict[str, Any]:
    """Per group dimension: its grid, size, stride and where its groups run (node/sn/inter).

    Group g of a dimension = ranks ``base + k*stride`` (k < size) for every base whose own
    coordinate in that dimension is 0: exactly the framework's groups, without listing them.
    """
    strides = grids.all_strides(rm.layout)
    out = {}
    for d in group_dims(rm.layout.framework):
        size = rm.layout.size(d)
        out[d] = {
            "grid": grids.grid_of(d),
            "size": size,
            "stride": strides[d],
            "count": rm.world_size // size,
            "spans": rm.spans.get(d, {}),
            "crossings": _crossings(rm, d),
        }
    return out
