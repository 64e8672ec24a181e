"""Packing rank blocks into super nodes: crossings equal a brute-force minimum on small cases.

The reference here is independent of slurm_supernode.placement.packing: groups come from
mixed-radix coordinates (ranks that agree on every other coordinate), and the minimum is
found by trying every assignment of node slots to super nodes with the allocation's node
counts, lexicographically by priority (TP first ... PP last). Groups that split nodes unevenly
(nproc 3 or 6) are included: the map reaches the minimum there too (test_optimum.py covers the
expert grid and torchtitan).
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_supernode.placement.optimum import minimum
from slurm_supernode.placement.packing import Line, pack, place

PRIORITY = ("tp", "cp", "dp", "pp")


def ref_groups(sizes: dict[str, int], order: tuple[str, ...]) -> dict[str, list[list[int]]]:
    """Groups per dimension from coordinates (first of ``order`` varies fastest)."""
    world = 1
    for d in order:
        world *= sizes[d]
    coords = []
    for r in range(world):
        c, rest = {}, r
        for d in order:
            rest, c[d] = divmod(rest, sizes[d])
        coords.append(c)
    out = {}
    for dim in order:
        by_key: dict[tuple, list[int]] = {}
        for r, c in enumerate(coords):
            by_key.setdefault(tuple(c[d] for d in order if d != dim), []).append(r)
        out[dim] = list(by_key.values())
    return out


def ref_crossings(groups, nproc, bins_of_slot) -> dict[str, int]:
    return {
        dim: sum(len({bins_of_slot[r // nproc] for r in g}) > 1 for g in gs)
        for dim, gs in groups.items()
    }


def assignments(capacities):
    """Every distinct slot -> super node assignment with these node counts."""
    slots = sum(capacities)

    def rec(k, free):
        if k == len(capacities):
            yield {}
            return
        for chosen in itertools.combinations(free, capacities[k]):
            rest = [s for s in free if s not in chosen]
            for tail in rec(k + 1, rest):
                yield {s: k for s in chosen} | tail

    for a in rec(0, list(range(slots))):
        yield [a[s] for s in range(slots)]


def lexicographic_minimum(groups, nproc, capacities, priority) -> tuple[int, ...]:
    best = None
    for bins in assignments(capacities):
        c = ref_crossings(groups, nproc, bins)
        key = tuple(c[d] for d in priority)
        if best is None or key < best:
            best = key
    return best


def lines_of(sizes, order, priority):
    stride, strides = 1, {}
    for d in order:
        strides[d] = stride
        stride *= sizes[d]
    return [Line(d, sizes[d], strides[d]) for d in priority]


def check(sizes, order, nproc, capacities):
    groups = ref_groups(sizes, order)
    lines = lines_of(sizes, order, PRIORITY)
    bins, best = place(lines, nproc, capacities)
    assert sorted(bins) == sorted(k for k, c in enumerate(capacities) for _ in range(c))
    got = ref_crossings(groups, nproc, bins)
    want = lexicographic_minimum(groups, nproc, capacities, PRIORITY)
    assert tuple(got[d] for d in PRIORITY) == want, (sizes, nproc, capacities, bins)
    assert tuple(best.per_dim[d] for d in PRIORITY) == want  # small: always computed
    return got


def test_issue_example_three_super_nodes_tp8_pp4():
    # 3 super nodes x 4 nodes x 8 GPUs, tp=8 pp=4 (dp=3): physical order crosses 16 DP groups,
    # the minimum is 8 (three whole stages in three super nodes, the fourth spread)
    sizes = {"tp": 8, "cp": 1, "dp": 3, "pp": 4}
    order = ("tp", "cp", "dp", "pp")
    groups = ref_groups(sizes, order)
    physical = [s // 4 for s in range(12)]
    assert ref_crossings(groups, 8, physical)["dp"] == 16
    lines = lines_of(sizes, order, PRIORITY)
    bins = pack(lines, 8, [4, 4, 4])
    got = ref_crossings(groups, 8, bins)
    assert got["dp"] == 8 and got["tp"] == 0 and got["pp"] == 24
    best = minimum(lines, 8, [4, 4, 4], witness=bins)
    # dp at its capacity bound (8); pp then crosses in all 24 groups: its own capacity bound
    # is 0, the bound given dp at its minimum is 24 (optimum.after_bound)
    assert best.per_dim == {"tp": 0, "cp": 0, "dp": 8, "pp": 24}
    assert set(best.method.values()) == {"lower bound reached"}
    alone = minimum(lines, 8, [4, 4, 4])  # without the packer's map: the exact search
    assert alone.per_dim == best.per_dim and alone.method["pp"] == "exact search"


def test_partial_allocation_keeps_tp_pairs_together():
    # tp=8 over two 4-GPU nodes, super nodes with 3 and 3 allocated nodes: physical order pairs
    # (n0,n1) (n2,n3') ... straddles; the packing keeps all but one pair inside
    check({"tp": 8, "cp": 1, "dp": 3, "pp": 1}, ("tp", "cp", "dp", "pp"), 4, [3, 3])


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=2, max_size=3).filter(lambda c: sum(c) <= 8),
    st.sampled_from([1, 2, 3, 4, 6]),
    st.data(),
)
def test_crossings_equal_brute_force_minimum(capacities, nproc, data):
    world = sum(capacities) * nproc
    divs = [d for d in range(1, world + 1) if world % d == 0]
    tp = data.draw(st.sampled_from([d for d in divs if nproc % d == 0 or d % nproc == 0]))
    rest = world // tp
    pp = data.draw(st.sampled_from([d for d in range(1, rest + 1) if rest % d == 0]))
    rest //= pp
    cp = data.draw(st.sampled_from([d for d in range(1, rest + 1) if rest % d == 0]))
    dp = rest // cp
    order = data.draw(st.sampled_from([("tp", "cp", "dp", "pp"), ("tp", "cp", "pp", "dp")]))
    check({"tp": tp, "cp": cp, "dp": dp, "pp": pp}, order, nproc, capacities)


# -- through build_rank_map, on random sites ---------------------------------------------------
def random_site(draw):
    """Unequal super nodes, interleaved host names, uneven device islands."""
    from slurm_supernode.site.model import Node, NodeSpec, Site, SuperNode
    from tests.placement.sites import default_links

    sizes = draw(st.lists(st.integers(1, 4), min_size=2, max_size=3))
    islands = draw(
        st.sampled_from(
            [
                ((0, 1, 2, 3, 4, 5, 6, 7),),
                ((0, 1, 2), (3, 4, 5, 6, 7)),
                ((0, 2, 4, 6), (1, 3, 5, 7)),
            ]
        )
    )
    spec = NodeSpec(devices=8, device_groups=islands)
    sns = []
    for s, count in enumerate(sizes):
        nodes = []
        for i in range(count):
            # names interleave super nodes: h0 in sn0, h1 in sn1, ... (Slurm order != physical)
            nodes.append(Node(f"h{(i * len(sizes) + s) % (4 * len(sizes)):02d}", f"sn{s}", i, spec))
        sns.append(SuperNode(f"sn{s}", tuple(nodes), feature=f"sn{s}"))
    return Site(name="rand", vendor="nvidia", supernodes=tuple(sns), links=default_links())


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_rank_map_crossings_equal_brute_force_minimum(data):
    from slurm_supernode.placement.model import Layout
    from slurm_supernode.placement.rankmap import build_rank_map

    site = random_site(data.draw)
    hosts = [n.hostname for n in site.nodes]
    k = data.draw(st.integers(2, min(8, len(hosts))))
    alloc = data.draw(st.permutations(hosts))[:k]  # partial allocation, random order
    nproc = data.draw(st.sampled_from([1, 2, 4, 8]))
    world = k * nproc
    divs = [d for d in range(1, world + 1) if world % d == 0]
    tp = data.draw(st.sampled_from([d for d in divs if nproc % d == 0 or d % nproc == 0]))
    pp = data.draw(st.sampled_from([d for d in divs if (world // tp) % d == 0]))
    sizes = {"tp": tp, "cp": 1, "dp": world // (tp * pp), "pp": pp}
    order = ("tp", "cp", "dp", "pp")
    rm = build_rank_map(site, alloc, Layout(tp=tp, pp=pp), nproc)
    sn_index = {sn.name: i for i, sn in enumerate(site.supernodes)}
    bins = [sn_index[n.supernode] for n in rm.nodes]
    groups = ref_groups(sizes, order)
    got = ref_crossings(groups, nproc, bins)
    for dim in PRIORITY:  # the plan reports the same crossings
        spans = rm.spans.get(dim, {})
        assert spans.get("inter", 0) == got[dim]
    caps = [sum(1 for n in rm.nodes if n.supernode == sn.name) for sn in site.supernodes]
    caps = [c for c in caps if c]
    want = lexicographic_minimum(groups, nproc, caps, PRIORITY)
    assert tuple(got[d] for d in PRIORITY) == want  # aligned or not (docs/planner.md)
    # TP inside one island whenever a whole island holds the node's ranks
    islands = site.nodes[0].spec.device_groups
    if tp <= nproc <= max(len(g) for g in islands):
        where = {d: i for i, g in enumerate(islands) for d in g}
        for g in groups["tp"]:
            assert len({where[rm.ranks[r].device] for r in g}) == 1
