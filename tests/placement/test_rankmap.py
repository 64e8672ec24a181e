"""Rank map: properties that must hold for any allocation and layout, plus error paths."""

from __future__ import annotations

import random

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from slurm_supernode.errors import InputError, PlacementError
from slurm_supernode.placement.checks import divisors, layout_problem
from slurm_supernode.placement.model import DENSE_DIMS, EXPERT_DIMS, GROUP_DIMS, Layout
from slurm_supernode.placement.rankmap import (
    build_rank_map,
    coords_of,
    expert_coords_of,
    group_ranks,
    rank_map_to_json,
)
from tests.placement.sites import make_site, reversed_names

SN, NPS, DEV = 3, 4, 8
SITE = make_site(SN, NPS, DEV, groups=2, namer=reversed_names(SN, NPS))
ALL_HOSTS = [n.hostname for n in SITE.nodes]


ORDERS = ("tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp")  # Megatron-LM's two


@st.composite
def allocations(draw):
    """A random host subset (random order), nproc and a layout the framework runs there."""
    k = draw(st.integers(1, len(ALL_HOSTS)))
    hosts = draw(st.permutations(ALL_HOSTS))[:k]
    nproc = draw(st.sampled_from([1, 2, 4, 8]))
    world = k * nproc
    tp = draw(st.sampled_from([d for d in divisors(world) if nproc % d == 0 or d % nproc == 0]))
    rest = world // tp
    pp = draw(st.sampled_from(divisors(rest)))
    cp = draw(st.sampled_from(divisors(rest // pp)))
    etp = draw(st.sampled_from([tp, 1]))
    ep = draw(st.sampled_from(divisors(world // (etp * pp))))
    order = draw(st.sampled_from(ORDERS))
    framework = draw(st.sampled_from(["megatron", "torchtitan"]))
    if framework == "torchtitan":
        order = ORDERS[0]
    problem = layout_problem(
        tp, cp, ep, pp, world, nproc, etp=etp, order=order, framework=framework
    )
    assume(problem is None)
    layout = Layout(tp=tp, cp=cp, ep=ep, pp=pp, etp=etp, order=order, framework=framework)
    return hosts, nproc, layout


@settings(max_examples=60, deadline=None)
@given(allocations())
def test_bijection_and_coordinates(alloc):
    hosts, nproc, layout = alloc
    rm = build_rank_map(SITE, hosts, layout, nproc)
    assert rm.world_size == len(hosts) * nproc == rm.layout.world_size
    slots = {(r.node_rank, r.device) for r in rm.ranks}
    assert len(slots) == rm.world_size
    assert [r.rank for r in rm.ranks] == list(range(rm.world_size))
    seen_coords = {tuple(r.coords[d] for d in DENSE_DIMS) for r in rm.ranks}
    assert len(seen_coords) == rm.world_size  # coordinates are a bijection too
    seen_expert = {tuple(r.expert_coords[d] for d in EXPERT_DIMS) for r in rm.ranks}
    assert len(seen_expert) == rm.world_size
    assert rm.layout.tp * rm.layout.cp * rm.layout.dp * rm.layout.pp == rm.world_size
    assert rm.layout.etp * rm.layout.ep * rm.layout.edp * rm.layout.pp == rm.world_size
    for r in rm.ranks:
        node = rm.nodes[r.node_rank]
        assert r.hostname == node.hostname
        assert r.device == node.visible_devices[r.local_rank]
        assert r.rank == r.node_rank * nproc + r.local_rank
        assert r.coords == coords_of(r.rank, rm.layout)
        assert r.expert_coords == expert_coords_of(r.rank, rm.layout)
        assert r.coords["pp"] == r.expert_coords["pp"]  # one pipeline for both grids
    hard = ("bijection", "world-size", "tp-in-node", "etp-in-node")
    assert all(c.ok for c in rm.checks if c.name in hard)


@settings(max_examples=40, deadline=None)
@given(allocations(), st.randoms(use_true_random=False))
def test_invariant_under_host_order_and_string_form(alloc, rnd):
    hosts, nproc, layout = alloc
    shuffled = list(hosts)
    rnd.shuffle(shuffled)
    a = build_rank_map(SITE, hosts, layout, nproc)
    b = build_rank_map(SITE, shuffled, layout, nproc)
    c = build_rank_map(SITE, ",".join(shuffled), layout, nproc)
    assert a == b == c
    assert rank_map_to_json(a) == rank_map_to_json(c)


@settings(max_examples=40, deadline=None)
@given(allocations())
def test_nodes_follow_physical_order(alloc):
    hosts, nproc, layout = alloc
    rm = build_rank_map(SITE, hosts, layout, nproc)
    # packing re-deals node ranks between super nodes; inside each one, physical order stays
    by_sn: dict[str, list] = {}
    for n in rm.nodes:
        by_sn.setdefault(n.supernode, []).append(SITE.physical_position(n.hostname))
    for positions in by_sn.values():
        assert positions == sorted(positions)
    assert [n.node_rank for n in rm.nodes] == list(range(len(hosts)))
    assert sorted(n.hostname for n in rm.nodes) == sorted(hosts)


@settings(max_examples=40, deadline=None)
@given(allocations())
def test_groups_partition_ranks_and_vary_one_coordinate(alloc):
    hosts, nproc, layout = alloc
    rm = build_rank_map(SITE, hosts, layout, nproc)
    for dim in GROUP_DIMS:
        groups = group_ranks(rm, dim)
        flat = sorted(r for g in groups for r in g)
        assert flat == list(range(rm.world_size))
        grid, names = (
            ("expert_coords", EXPERT_DIMS) if dim in EXPERT_DIMS[:3] else ("coords", DENSE_DIMS)
        )
        for g in groups:
            assert len(g) == rm.layout.size(dim)
            coords = [getattr(rm.ranks[r], grid) for r in g]
            assert [c[dim] for c in coords] == list(range(len(g)))
            assert len({tuple(c[d] for d in names if d != dim) for c in coords}) == 1


@settings(max_examples=40, deadline=None)
@given(allocations())
def test_tp_groups_inside_node_and_island(alloc):
    hosts, nproc, layout = alloc
    rm = build_rank_map(SITE, hosts, layout, nproc)
    islands = {d: i for i, g in enumerate(SITE.nodes[0].spec.device_groups) for d in g}
    for g in group_ranks(rm, "tp"):
        nodes = {rm.ranks[r].node_rank for r in g}
        if layout.tp <= nproc:
            assert len(nodes) == 1
            if layout.tp <= DEV // 2:  # fits one island of 4
                assert len({islands[rm.ranks[r].device] for r in g}) == 1


def test_visible_devices_follow_device_groups():
    rm = build_rank_map(SITE, ALL_HOSTS[:2], Layout(tp=4), nproc_per_node=4)
    first_island = SITE.nodes[0].spec.device_groups[0]
    assert all(n.visible_devices == first_island for n in rm.nodes)


def test_default_order_puts_tp_innermost_pp_outermost():
    rm = build_rank_map(SITE, ALL_HOSTS[:4], Layout(tp=8, pp=2))  # 32 ranks, dp=2
    assert [rm.ranks[r].coords["tp"] for r in range(8)] == list(range(8))
    assert rm.ranks[8].coords == {"tp": 0, "cp": 0, "dp": 1, "pp": 0}
    assert rm.ranks[8].expert_coords == {"etp": 0, "ep": 0, "edp": 1, "pp": 0}
    assert rm.ranks[16].coords["pp"] == 1


def test_ep_is_carved_out_of_dp_not_multiplied_into_the_world():
    # 16 ranks, tp=2, ep=4: Megatron's dp is 8 (not 2) and its edp 2; EP neighbours sit etp
    # ranks apart, so EP groups are 0,2,4,6 / 1,3,5,7 / 8,10,12,14 / 9,11,13,15.
    rm = build_rank_map(SITE, ALL_HOSTS[:2], Layout(tp=2, ep=4))
    assert (rm.layout.dp, rm.layout.edp, rm.layout.etp) == (8, 2, 2)
    assert group_ranks(rm, "ep") == [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]]
    assert group_ranks(rm, "dp")[0] == [0, 2, 4, 6, 8, 10, 12, 14]
    assert group_ranks(rm, "edp") == [[r, r + 8] for r in range(8)]
    flat = build_rank_map(SITE, ALL_HOSTS[:2], Layout(tp=2, ep=4, etp=1))
    assert group_ranks(flat, "ep")[:2] == [[0, 1, 2, 3], [4, 5, 6, 7]]  # etp=1: EP adjacent


def test_plain_order_is_hostname_order_and_ignores_islands():
    hosts = ALL_HOSTS[:2] + ALL_HOSTS[NPS : NPS + 2]  # two nodes of each of two super nodes
    plain = build_rank_map(SITE, hosts, Layout(tp=4), physical=False)
    assert [n.hostname for n in plain.nodes] == sorted(hosts, key=lambda h: int(h[1:]))
    assert plain.nodes[0].visible_devices == tuple(range(DEV))
    physical = build_rank_map(SITE, hosts, Layout(tp=4))
    assert [n.hostname for n in physical.nodes] != [n.hostname for n in plain.nodes]
    assert {c.name: c.ok for c in plain.checks}["tp-in-island"] is False
    assert {c.name: c.ok for c in physical.checks}["tp-in-island"] is True


def test_deterministic_across_calls():
    hosts = random.Random(7).sample(ALL_HOSTS, 6)
    maps = [build_rank_map(SITE, hosts, Layout(tp=2, pp=3)) for _ in range(3)]
    assert maps[0] == maps[1] == maps[2]


def test_unknown_hosts_are_named():
    with pytest.raises(PlacementError, match=r"x\[1-2\]") as exc:
        build_rank_map(SITE, ["x1", "x2", ALL_HOSTS[0]])
    assert exc.value.exit_code == 2


def test_duplicate_hosts_rejected():
    with pytest.raises(PlacementError, match="duplicate"):
        build_rank_map(SITE, [ALL_HOSTS[0], ALL_HOSTS[0]])


def test_bad_hostlist_string():
    with pytest.raises(InputError, match="bad hostlist"):
        build_rank_map(SITE, "h[0-")


def test_nproc_bounds_and_mixed_nodes():
    with pytest.raises(PlacementError, match=r"outside 1\.\.8"):
        build_rank_map(SITE, ALL_HOSTS[:1], nproc_per_node=9)
    small = make_site(1, 2, 4)
    big = make_site(1, 2, 8, name="b", namer=lambda s, i, g: f"m{g}")
    mixed = type(small)(
        name="mixed",
        vendor="nvidia",
        supernodes=(small.supernodes[0], big.supernodes[0].__class__("sn01", big.nodes, "sn01")),
        links=small.links,
    )
    with pytest.raises(PlacementError, match="different device counts"):
        build_rank_map(mixed, ["n0", "m0"])
    rm = build_rank_map(mixed, ["n0", "m0"], nproc_per_node=4)
    assert rm.world_size == 8


def test_bad_order():
    with pytest.raises(PlacementError, match="not a permutation"):
        build_rank_map(SITE, ALL_HOSTS[:1], Layout(order="tp-dp-pp"))


def test_json_schema_fields():
    rm = build_rank_map(SITE, ALL_HOSTS[:2], Layout(tp=4, pp=2))
    doc = rank_map_to_json(rm)
    assert doc["world_size"] == 16 and doc["schema"] == 2
    assert doc["layout"] == {
        "framework": "megatron",
        "tp": 4,
        "cp": 1,
        "ep": 1,
        "etp": 4,
        "dp": 2,
        "edp": 2,
        "pp": 2,
        "order": rm.layout.order,
    }
    assert set(doc["groups"]) == set(GROUP_DIMS)
    assert doc["groups"]["pp"] == {
        "grid": "dense",
        "size": 2,
        "stride": 8,
        "count": 8,
        "spans": {"supernode": 8},  # two nodes of one super node
        "crossings": {
            "node": 8,
            "supernode": 0,
            "supernode_min": 0,
            "supernode_min_by": "lower bound reached",
        },
    }
    assert set(doc["nodes"][0]) == {"hostname", "node_rank", "supernode", "visible_devices"}
    assert set(doc["ranks"][0]) == {
        "rank",
        "hostname",
        "node_rank",
        "local_rank",
        "device",
        "supernode",
        "coords",
        "expert_coords",
    }
    assert set(doc["ranks"][5]["coords"]) == set(DENSE_DIMS)
    assert set(doc["ranks"][5]["expert_coords"]) == set(EXPERT_DIMS)
    assert all(set(c) == {"name", "ok", "detail"} for c in doc["checks"])
    assert doc["cost"] is None
    assert rank_map_to_json(rm, ranks=False)["ranks"] is None
