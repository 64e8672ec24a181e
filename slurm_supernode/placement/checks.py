"""Guarantees of a rank map: validated before placing, checked on the map, reported.

Why two kinds: *hard* constraints (dp must be whole, a TP group must fit in a node, the map
must be a bijection) make a layout unusable, so they raise PlacementError naming the broken
constraint and the nearest feasible layouts. *Soft* findings (TP crossing super nodes, a
tp*cp*ep product that does not divide the super node, partial super nodes) are legal but slow;
they are reported as failed checks so ``snrun plan`` can show what they cost.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from slurm_supernode.errors import PlacementError
from slurm_supernode.placement import layout as grids
from slurm_supernode.placement.model import (
    DEFAULT_FRAMEWORK,
    DEFAULT_ORDER,
    Check,
    Layout,
    RankList,
    RankMap,
    group_dims,
)
from slurm_supernode.site.model import LINK_LEVELS, Site

HARD_CHECKS = frozenset({"bijection", "world-size", "tp-in-node", "etp-in-node"})
PARALLEL_DIMS = ("tp", "cp", "ep", "pp")  # given by the user; dp and edp are derived


def divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _node_problem(name: str, size: int, nproc: int) -> str | None:
    """snrun's own rule: a tensor-parallel group fits a node, or is whole nodes."""
    if size <= nproc and nproc % size:
        return f"{name}={size} does not divide {nproc} devices per node"
    if size > nproc and size % nproc:
        return f"{name}={size} is larger than a node ({nproc} devices) but not a multiple of it"
    return None


def layout_problem(
    tp: int,
    cp: int,
    ep: int,
    pp: int,
    world: int,
    nproc: int,
    dp: int | None = None,
    *,
    etp: int | None = None,
    order: str = DEFAULT_ORDER,
    framework: str = DEFAULT_FRAMEWORK,
    dp_replicate: int = 1,
) -> str | None:
    """Why the layout cannot run on ``world`` ranks of ``nproc`` per node; None if it can.

    snrun's placement rules (TP and ETP groups fit a node) first, then the framework's own
    assertions, worded as the framework words them (``layout.framework_problem``).
    """
    lay = Layout(
        tp=tp,
        cp=cp,
        ep=ep,
        pp=pp,
        etp=etp,
        order=order,
        framework=framework,
        dp_replicate=dp_replicate,
    )
    for name in ("tp", "cp", "ep", "etp", "pp", "dp_replicate"):
        if lay.size(name) < 1:
            return f"{name}={lay.size(name)} must be at least 1"
    for name in ("tp", "etp"):
        problem = _node_problem(name, lay.size(name), nproc)
        if problem:
            return problem
    problem = grids.framework_problem(lay, world)
    if problem:
        return problem
    model = tp * cp * pp
    if dp is not None and dp * model != world:
        return f"dp={dp} does not match world size {world} / (tp*cp*pp={model}) = {world / model:g}"
    return None


def _search_dims(layout: Layout) -> tuple[str, ...]:
    extra = ("etp",) if layout.etp is not None else ()
    return PARALLEL_DIMS + extra + (("dp_replicate",) if layout.dp_replicate != 1 else ())


def nearest_feasible(
    layout: Layout, world: int, nproc: int, limit: int = 3
) -> list[dict[str, int]]:
    """Feasible (tp, cp, ep, pp[, etp, dp_replicate]) closest to the request (log-distance),
    <= 2 changes."""
    dims = _search_dims(layout)
    want = {d: max(1, layout.size(d)) for d in dims}
    cands = {d: divisors(world) for d in dims}
    found: dict[tuple[int, ...], float] = {}

    def consider(choice: dict[str, int]) -> None:
        key = tuple(choice[d] for d in dims)
        if key in found:
            return
        problem = layout_problem(
            choice["tp"],
            choice["cp"],
            choice["ep"],
            choice["pp"],
            world=world,
            nproc=nproc,
            etp=choice.get("etp"),
            order=layout.order,
            framework=layout.framework,
            dp_replicate=choice.get("dp_replicate", 1),
        )
        if problem is not None:
            return
        found[key] = sum(abs(math.log2(choice[d] / want[d])) for d in dims)

    for i, a in enumerate(dims):
        for va in cands[a]:
            consider(want | {a: va})
            for b in dims[i + 1 :]:
                near = [v for v in cands[b] if abs(math.log2(v / want[b])) <= 3]
                for vb in near:
                    consider(want | {a: va, b: vb})
    best = sorted(found.items(), key=lambda kv: (kv[1], kv[0]))[:limit]
    best = [kv for kv in best if kv[1] <= best[0][1] + 1.0]  # drop far-away extras
    return [dict(zip(dims, k, strict=True)) for k, _ in best]


def _describe(choice: dict[str, int], layout: Layout) -> str:
    diff = [f"{d}={v}" for d, v in choice.items() if v != layout.size(d)]
    return " ".join(diff) or "as given"


def resolve_layout(layout: Layout, world: int, nproc: int) -> Layout:
    """Check ``layout`` against the allocation and the framework; fill in dp, edp and etp.

    ``dp`` is derived (world / tp*cp*pp); a dp other than 1 in the input must agree.
    """
    grids.parse_order(layout.order)
    if layout.framework == "torchtitan" and layout.order != DEFAULT_ORDER:
        raise PlacementError(
            str(grids.framework_problem(layout, world)),
            where="--order",
            hint="drop --order / --use-tp-pp-dp-mapping (torchtitan), or use --framework megatron",
        )
    given_dp = layout.dp if layout.dp != 1 else None
    problem = layout_problem(
        layout.tp,
        layout.cp,
        layout.ep,
        layout.pp,
        world=world,
        nproc=nproc,
        dp=given_dp,
        etp=layout.etp,
        order=layout.order,
        framework=layout.framework,
        dp_replicate=layout.dp_replicate,
    )
    if problem:
        near = nearest_feasible(layout, world, nproc)
        hint = (
            "nearest feasible: " + ", ".join(_describe(c, layout) for c in near)
            if near
            else "no feasible layout near this one"
        )
        raise PlacementError(
            f"{problem} ({world} ranks on {world // nproc} nodes x {nproc}); {hint}",
            where="layout",
        )
    return grids.derived(layout, world)


# -- spans ---------------------------------------------------------------------------------
def dim_spans(rm: RankMap, dim: str) -> Counter[str]:
    """How many groups of ``dim`` stay inside one node, one super node, or cross super nodes."""
    return span_counts(rm.layout, rm.nproc_per_node, [n.supernode for n in rm.nodes], dim)


def span_counts(
    layout: Layout, nproc: int, sn_of: list[str], dim: str, *, stop_at_inter: bool = False
) -> Counter[str]:
    """Spans computed from the node order alone (no rank list): the planner's search uses it.

    ``dim`` is one group dimension (tp, cp, dp, pp, ep, etp, edp; torchtitan's dp_shard,
    dp_replicate, efsdp) or several on one grid
    ('dp-cp': Megatron's data-parallel group with context parallelism). ``sn_of[i]`` is the
    super node of node rank i. ``stop_at_inter`` returns as soon as one group crosses super
    nodes (enough to know the slowest level).
    """
    shape = grids.group_shape(layout, dim)
    shape = tuple((n, s) for n, s in shape if n > 1)
    counts: Counter[str] = Counter()
    if not shape:
        return counts
    offsets = [0]
    for n, s in shape:
        offsets = [o + i * s for i in range(n) for o in offsets]
    offsets.sort()
    world = len(sn_of) * nproc
    if len(shape) == 1:
        size, stride = shape[0]
        block = stride * size
        bases = (b for start in range(0, world, block) for b in range(start, start + stride))
    else:
        bases = (r for r in range(world) if all((r // s) % n == 0 for n, s in shape))
    span = offsets[-1]
    for base in bases:
        first = base // nproc
        last = (base + span) // nproc
        if first == last:
            counts["node"] += 1
            continue
        home = sn_of[first]
        if sn_of[last] == home and all(sn_of[(base + o) // nproc] == home for o in offsets):
            counts["supernode"] += 1
            continue
        counts["inter"] += 1
        if stop_at_inter:
            return counts
    return counts


def all_spans(rm: RankMap) -> dict[str, Counter[str]]:
    return {d: dim_spans(rm, d) for d in group_dims(rm.layout.framework)}


def slowest_level(spans: Counter[str]) -> str | None:
    """The slowest link level any group of a dimension uses; None when it does not talk."""
    levels = [lv for lv in LINK_LEVELS if spans.get(lv)]
    return levels[-1] if levels else None


def _span_detail(dim: str, rm: RankMap, spans: Counter[str]) -> str:
    size = rm.layout.size(dim)
    if not spans:
        return f"{dim}=1: no communication"
    parts = ", ".join(f"{spans[lv]} {lv}" for lv in LINK_LEVELS if spans.get(lv))
    groups = sum(spans.values())
    return f"{groups} groups of {size}: {parts}"


def _slots(rm: RankMap) -> tuple[int, bool]:
    """How many distinct (node rank, device) slots the ranks use; whether they come in order.

    A RankList places rank r on node r // nproc, device ``visible_devices[r % nproc]`` by
    construction (its rank numbers are its positions): its slots come from the nodes, without
    making 100,000 rank objects. Any other sequence is read rank by rank.
    """
    if isinstance(rm.ranks, RankList):
        nproc, nodes = rm.ranks.nproc, rm.ranks.nodes
        if len({n.node_rank for n in nodes}) == len(nodes):  # then slots of nodes are apart
            distinct: dict[tuple[int, ...], int] = {}
            for n in nodes:
                devs = n.visible_devices
                if devs not in distinct:
                    distinct[devs] = len(set(devs[:nproc]))
            return sum(distinct[n.visible_devices] for n in nodes), True
        return len({(n.node_rank, d) for n in nodes for d in n.visible_devices[:nproc]}), True
    slots = {(r.node_rank, r.device) for r in rm.ranks}
    return len(slots), all(r.rank == i for i, r in enumerate(rm.ranks))


# -- checks on a built map ---------------------------------------------------------------
def run_checks(
    rm: RankMap, site: Site, spans: dict[str, Counter[str]] | None = None
) -> tuple[Check, ...]:
    """Every guarantee, checked on the map itself (not assumed from the construction)."""
    spans = spans if spans is not None else all_spans(rm)
    out: list[Check] = []
    nproc, world, lay = rm.nproc_per_node, rm.world_size, rm.layout

    slots, in_order = _slots(rm)
    out.append(
        Check(
            "bijection",
            slots == world and in_order,
            f"{world} ranks on {slots} distinct (node, device) slots",
        )
    )
    expect = len(rm.nodes) * nproc
    out.append(
        Check(
            "world-size",
            world == expect == lay.world_size,
            f"{world} ranks = {len(rm.nodes)} nodes x {nproc} per node; layout {lay.world_size}",
        )
    )
    for dim in ("tp", "etp"):
        if dim == "etp" and lay.expert_tp == 1:
            continue
        out += _tensor_checks(rm, site, dim, spans[dim])
    out.append(_divides_supernode(rm, site))
    out.append(_whole_supernodes(rm, site))
    for dim in group_dims(lay.framework):
        out.append(Check(f"span-{dim}", True, _span_detail(dim, rm, spans[dim])))
    return tuple(out)


def _tensor_checks(rm: RankMap, site: Site, dim: str, spans: Counter[str]) -> list[Check]:
    """TP (and expert TP) groups: inside one node (hard) and island, else one super node."""
    lay, nproc = rm.layout, rm.nproc_per_node
    size, name = lay.size(dim), dim.upper()
    if size <= nproc:
        bad = spans.get("supernode", 0) + spans.get("inter", 0)
        return [
            Check(
                f"{dim}-in-node",
                bad == 0,
                f"all {rm.world_size // size} {name} groups inside one node"
                if bad == 0
                else f"{bad} {name} groups span nodes (order {lay.order} puts {name} apart)",
            ),
            _island_check(rm, site, dim),
        ]
    bad = spans.get("inter", 0)
    return [
        Check(
            f"{dim}-in-supernode",
            bad == 0,
            f"{dim}={size} > {nproc} per node: all {name} groups inside one super node"
            if bad == 0
            else f"{dim}={size} > {nproc} per node and {bad} {name} groups cross super nodes",
        )
    ]


def _island_check(rm: RankMap, site: Site, dim: str = "tp") -> Check:
    """TP groups inside one device island (fastest links inside a node) where they fit."""
    lay, nproc = rm.layout, rm.nproc_per_node
    tp = lay.size(dim)
    name = f"{dim}-in-island"
    if tp == 1:
        return Check(name, True, f"{dim}=1")
    stride = grids.all_strides(lay)[dim]
    bad = 0
    # device_groups -> (size, device->island)
    islands: dict[tuple[tuple[int, ...], ...], tuple[int, dict[int, int]]] = {}
    nodes = rm.nodes
    # (devices, islands) -> crossing groups on such a node
    per_node: dict[tuple[tuple[int, ...], tuple[tuple[int, ...], ...]], int] = {}
    repeats = nproc % (tp * stride) == 0  # every node holds whole groups, the same pattern

    def crossing(first: int, where: dict[int, int]) -> bool:
        ids = set()
        for k in range(tp):
            r = first + k * stride
            ids.add(where[nodes[r // nproc].visible_devices[r % nproc]])
        return len(ids) > 1

    for n in range(len(nodes)) if repeats else ():
        groups = site.node(nodes[n].hostname).spec.device_groups
        key = (nodes[n].visible_devices, groups)
        if key not in per_node:
            where = {d: i for i, g in enumerate(groups) for d in g}
            fits = tp <= max(len(g) for g in groups)
            firsts = [n * nproc + f for f in range(nproc) if (f // stride) % tp == 0]
            per_node[key] = sum(crossing(f, where) for f in firsts) if fits else 0
        bad += per_node[key]
    for group_first in range(0, rm.world_size) if not repeats else ():
        if (group_first // stride) % tp:
            continue
        groups = site.node(nodes[group_first // nproc].hostname).spec.device_groups
        if groups not in islands:
            where = {d: i for i, g in enumerate(groups) for d in g}
            islands[groups] = (max(len(g) for g in groups), where)
        size, where = islands[groups]
        if tp <= size and crossing(group_first, where):
            bad += 1
    if bad:
        return Check(name, False, f"{bad} {dim.upper()} groups cross device islands")
    return Check(name, True, f"every {dim.upper()} group that fits an island is inside one")


def _divides_supernode(rm: RankMap, site: Site) -> Check:
    lay, nproc = rm.layout, rm.nproc_per_node
    # the blocks of ranks the inner groups fill: tp x cp (dense) and etp x ep (expert)
    inner = math.lcm(lay.tp * lay.cp, lay.expert_tp * lay.ep)
    sizes = sorted({site.supernode(sn).job_size * nproc for sn in {n.supernode for n in rm.nodes}})
    bad = [s for s in sizes if s % inner]
    detail = (
        f"lcm(tp*cp={lay.tp * lay.cp}, etp*ep={lay.expert_tp * lay.ep})={inner} vs super node "
        f"size {'/'.join(map(str, sizes))} devices"
    )
    return Check(
        "tp-cp-ep-divides-supernode", not bad, detail + (" (does not divide)" if bad else "")
    )


def _whole_supernodes(rm: RankMap, site: Site) -> Check:
    """Whole = at least the nodes a job takes of it (all but its spares: 16 of 18 trays)."""
    used = Counter(n.supernode for n in rm.nodes)
    partial = sorted(sn for sn, k in used.items() if k < site.supernode(sn).job_size)
    if partial:
        names = ", ".join(partial[:5]) + (f" (+{len(partial) - 5})" if len(partial) > 5 else "")
        return Check("whole-supernodes", False, f"partial super nodes: {names}")
    return Check("whole-supernodes", True, f"{len(used)} whole super nodes")


def raise_on_hard_failures(found: Iterable[Check], rm: RankMap, site: Site) -> None:
    del site
    broken = [c for c in found if c.name in HARD_CHECKS and not c.ok]
    if broken:
        near = nearest_feasible(rm.layout, rm.world_size, rm.nproc_per_node)
        hint = "; ".join(f"{c.name}: {c.detail}" for c in broken)
        alt = ", ".join(_describe(c, rm.layout) for c in near)
        raise PlacementError(
            f"layout {rm.layout.as_dict()} breaks a guarantee: {hint}",
            where="layout",
            hint=f"use the default order {DEFAULT_ORDER} or: {alt}" if alt else None,
        )
