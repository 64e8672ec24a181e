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
from slurm_supernode.placement.model import DIMENSIONS, Check, Layout, RankMap
from slurm_supernode.placement.rankmap import dim_strides, parse_order
from slurm_supernode.site.model import LINK_LEVELS, Site

HARD_CHECKS = frozenset({"bijection", "world-size", "tp-in-node"})
PARALLEL_DIMS = ("tp", "cp", "ep", "pp")  # given by the user; dp is derived


def divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def layout_problem(
    tp: int, cp: int, ep: int, pp: int, world: int, nproc: int, dp: int | None = None
) -> str | None:
    """Why (tp, cp, ep, pp) cannot run on ``world`` ranks of ``nproc`` per node; None if it can."""
    for name, v in (("tp", tp), ("cp", cp), ("ep", ep), ("pp", pp)):
        if v < 1:
            return f"{name}={v} must be at least 1"
    if tp <= nproc and nproc % tp:
        return f"tp={tp} does not divide {nproc} devices per node"
    if tp > nproc and tp % nproc:
        return f"tp={tp} is larger than a node ({nproc} devices) but not a multiple of it"
    prod = tp * cp * ep * pp
    if world % prod:
        return f"tp*cp*ep*pp={prod} does not divide the world size {world}"
    if dp is not None and dp * prod != world:
        return (
            f"dp={dp} does not match world size {world} / (tp*cp*ep*pp={prod}) = {world / prod:g}"
        )
    return None


def nearest_feasible(
    layout: Layout, world: int, nproc: int, limit: int = 3
) -> list[dict[str, int]]:
    """Feasible (tp, cp, ep, pp) closest to the request (log-distance), changing <= 2 dims."""
    want = {d: max(1, layout.size(d)) for d in PARALLEL_DIMS}
    cands = {d: divisors(world) for d in PARALLEL_DIMS}
    found: dict[tuple[int, ...], float] = {}

    def consider(choice: dict[str, int]) -> None:
        key = tuple(choice[d] for d in PARALLEL_DIMS)
        if key in found or layout_problem(*key, world=world, nproc=nproc) is not None:
            return
        found[key] = sum(abs(math.log2(choice[d] / want[d])) for d in PARALLEL_DIMS)

    for i, a in enumerate(PARALLEL_DIMS):
        for va in cands[a]:
            consider(want | {a: va})
            for b in PARALLEL_DIMS[i + 1 :]:
                near = [v for v in cands[b] if abs(math.log2(v / want[b])) <= 3]
                for vb in near:
                    consider(want | {a: va, b: vb})
    best = sorted(found.items(), key=lambda kv: (kv[1], kv[0]))[:limit]
    best = [kv for kv in best if kv[1] <= best[0][1] + 1.0]  # drop far-away extras
    return [dict(zip(PARALLEL_DIMS, k, strict=True)) for k, _ in best]


def _describe(choice: dict[str, int], layout: Layout) -> str:
    diff = [f"{d}={choice[d]}" for d in PARALLEL_DIMS if choice[d] != layout.size(d)]
    return " ".join(diff) or "as given"


def resolve_layout(layout: Layout, world: int, nproc: int) -> Layout:
    """Check ``layout`` against the allocation and return it with dp filled in.

    ``dp`` is derived (world / tp*cp*ep*pp); a dp other than 1 in the input must agree.
    """
    parse_order(layout.order)
    given_dp = layout.dp if layout.dp != 1 else None
    problem = layout_problem(
        layout.tp, layout.cp, layout.ep, layout.pp, world=world, nproc=nproc, dp=given_dp
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
    prod = layout.tp * layout.cp * layout.ep * layout.pp
    return Layout(
        tp=layout.tp,
        cp=layout.cp,
        ep=layout.ep,
        dp=world // prod,
        pp=layout.pp,
        order=layout.order,
    )


# -- spans ---------------------------------------------------------------------------------
def dim_spans(rm: RankMap, dim: str) -> Counter[str]:
    """How many groups of ``dim`` stay inside one node, one super node, or cross super nodes."""
    return span_counts(rm.layout, rm.nproc_per_node, [n.supernode for n in rm.nodes], dim)


def span_counts(
    layout: Layout, nproc: int, sn_of: list[str], dim: str, *, stop_at_inter: bool = False
) -> Counter[str]:
    """Spans computed from the node order alone (no rank list): the planner's search uses it.

    ``sn_of[i]`` is the super node of node rank i. ``stop_at_inter`` returns as soon as one
    group crosses super nodes (enough to know the slowest level).
    """
    size = layout.size(dim)
    counts: Counter[str] = Counter()
    if size == 1:
        return counts
    stride = dim_strides(layout)[dim]
    world = len(sn_of) * nproc
    block = stride * size
    for start in range(0, world, block):
        for base in range(start, start + stride):
            first = base // nproc
            last = (base + (size - 1) * stride) // nproc
            if first == last:
                counts["node"] += 1
                continue
            if (
                sn_of[first] == sn_of[last]
                and len(
                    {sn_of[(base + k * stride) // nproc] for k in range(1, size - 1)}
                    | {sn_of[first]}
                )
                == 1
            ):
                counts["supernode"] += 1
                continue
            counts["inter"] += 1
            if stop_at_inter:
                return counts
    return counts


def all_spans(rm: RankMap) -> dict[str, Counter[str]]:
    return {d: dim_spans(rm, d) for d in DIMENSIONS}


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


# -- checks on a built map ---------------------------------------------------------------
def run_checks(rm: RankMap, site: Site, spans: dict[str, Counter[str]] | None = None) -> tuple:
    """Every guarantee, checked on the map itself (not assumed from the construction)."""
    spans = spans if spans is not None else all_spans(rm)
    out: list[Check] = []
    nproc, world, lay = rm.nproc_per_node, rm.world_size, rm.layout

    slots = {(r.node_rank, r.device) for r in rm.ranks}
    in_order = all(r.rank == i for i, r in enumerate(rm.ranks))
    out.append(
        Check(
            "bijection",
            len(slots) == world and in_order,
            f"{world} ranks on {len(slots)} distinct (node, device) slots",
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
    tp = spans["tp"]
    if lay.tp <= nproc:
        bad = tp.get("supernode", 0) + tp.get("inter", 0)
        out.append(
            Check(
                "tp-in-node",
                bad == 0,
                f"all {lay.world_size // lay.tp} TP groups inside one node"
                if bad == 0
                else f"{bad} TP groups span nodes (order {lay.order} puts TP apart)",
            )
        )
        out.append(_island_check(rm, site))
    else:
        bad = tp.get("inter", 0)
        out.append(
            Check(
                "tp-in-supernode",
                bad == 0,
                f"tp={lay.tp} > {nproc} per node: all TP groups inside one super node"
                if bad == 0
                else f"tp={lay.tp} > {nproc} per node and {bad} TP groups cross super nodes",
            )
        )
    out.append(_divides_supernode(rm, site))
    out.append(_whole_supernodes(rm, site))
    for dim in DIMENSIONS:
        out.append(Check(f"span-{dim}", True, _span_detail(dim, rm, spans[dim])))
    return tuple(out)


def _island_check(rm: RankMap, site: Site) -> Check:
    """TP groups inside one device island (fastest links inside a node) where they fit."""
    lay, nproc = rm.layout, rm.nproc_per_node
    if lay.tp == 1:
        return Check("tp-in-island", True, "tp=1")
    stride = dim_strides(lay)["tp"]
    bad = 0
    islands: dict[tuple, tuple[int, dict[int, int]]] = {}  # device_groups -> (size, device->island)
    for group_first in range(0, rm.world_size):
        if (group_first // stride) % lay.tp:
            continue
        groups = site.node(rm.nodes[group_first // nproc].hostname).spec.device_groups
        if groups not in islands:
            where = {d: i for i, g in enumerate(groups) for d in g}
            islands[groups] = (max(len(g) for g in groups), where)
        size, where = islands[groups]
        if lay.tp > size:
            continue
        ids = {where[rm.ranks[group_first + k * stride].device] for k in range(lay.tp)}
        if len(ids) > 1:
            bad += 1
    if bad:
        return Check("tp-in-island", False, f"{bad} TP groups cross device islands")
    return Check("tp-in-island", True, "every TP group that fits an island is inside one")


def _divides_supernode(rm: RankMap, site: Site) -> Check:
    lay, nproc = rm.layout, rm.nproc_per_node
    inner = lay.tp * lay.cp * lay.ep
    sizes = sorted(
        {len(site.supernode(sn).nodes) * nproc for sn in {n.supernode for n in rm.nodes}}
    )
    bad = [s for s in sizes if s % inner]
    detail = f"tp*cp*ep={inner} vs super node size {'/'.join(map(str, sizes))} devices"
    return Check(
        "tp-cp-ep-divides-supernode", not bad, detail + (" (does not divide)" if bad else "")
    )


def _whole_supernodes(rm: RankMap, site: Site) -> Check:
    used = Counter(n.supernode for n in rm.nodes)
    partial = sorted(sn for sn, k in used.items() if k != len(site.supernode(sn).nodes))
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
            hint=f"use the default order tp-cp-ep-dp-pp or: {alt}" if alt else None,
        )
