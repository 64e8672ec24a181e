"""RankList: the ranks of a map made on access; every reader sees what a tuple would give."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_supernode.placement import checks
from slurm_supernode.placement.model import (
    DEFAULT_ORDER,
    TP_PP_DP_ORDER,
    Layout,
    NodePlacement,
    RankList,
    RankPlacement,
)
from slurm_supernode.placement.planjson import write_plan_json
from slurm_supernode.placement.rankmap import (
    build_rank_map,
    coords_of,
    expert_coords_of,
    rank_map_to_json,
)
from tests.placement.sites import make_site, reversed_names

SITE = make_site(3, 4, 8, groups=2, namer=reversed_names(3, 4))
HOSTS = [n.hostname for n in SITE.nodes]


def _expected(rm) -> tuple[RankPlacement, ...]:
    """The ranks as a tuple, from the nodes and the grid arithmetic written out again."""
    out = []
    for node in rm.nodes:
        for local in range(rm.nproc_per_node):
            r = node.node_rank * rm.nproc_per_node + local
            out.append(
                RankPlacement(
                    r,
                    node.hostname,
                    node.node_rank,
                    local,
                    node.visible_devices[local],
                    node.supernode,
                    coords_of(r, rm.layout),
                    expert_coords_of(r, rm.layout),
                )
            )
    return tuple(out)


LAYOUTS = [
    Layout(tp=2, pp=2),
    Layout(tp=4, cp=2),
    Layout(tp=2, ep=4, pp=2),
    Layout(tp=4, ep=2, etp=1),
    Layout(tp=2, pp=3, order=TP_PP_DP_ORDER),
    Layout(tp=2, cp=2, ep=4, order=DEFAULT_ORDER, framework="torchtitan"),
]


def _divides(layout: Layout, nproc: int) -> bool:
    world = len(HOSTS) * nproc
    expert = layout.ep * (layout.etp or layout.tp) * layout.pp
    return world % (layout.tp * layout.cp * layout.pp) == 0 and world % expert == 0


CASES = [(lay, n) for lay in LAYOUTS for n in (8, 4, 2) if _divides(lay, n)]


@pytest.mark.parametrize(("layout", "nproc"), CASES, ids=repr)
def test_ranks_equal_the_tuple_the_grid_gives(layout, nproc):
    rm = build_rank_map(SITE, HOSTS, layout, nproc)
    want = _expected(rm)
    assert isinstance(rm.ranks, RankList)
    assert len(rm.ranks) == len(want) == rm.world_size
    assert tuple(rm.ranks) == want
    assert rm.ranks == want and want == tuple(rm.ranks)
    assert [rm.ranks[i] for i in range(len(want))] == list(want)
    assert rm.ranks[-1] == want[-1] and rm.ranks[3:9:2] == want[3:9:2]
    # the fast writer and the documented object agree, key order included
    buf = io.StringIO()
    write_plan_json(rm, buf)
    doc = json.loads(buf.getvalue())
    assert doc["ranks"] == [
        rank_map_to_json(replace(rm, ranks=want))["ranks"][i] for i in range(len(want))
    ]


def test_index_errors_are_clear():
    rm = build_rank_map(SITE, HOSTS[:2], Layout(tp=8))
    with pytest.raises(IndexError, match="rank 16 out of range"):
        rm.ranks[16]
    with pytest.raises(TypeError):
        rm.ranks["0"]  # type: ignore[index]
    assert rm.ranks[-16].rank == 0


def test_a_node_with_a_device_twice_fails_the_bijection_check():
    rm = build_rank_map(SITE, HOSTS[:2], Layout(tp=8))
    n0 = rm.nodes[0]
    bad_nodes = (n0._replace(visible_devices=(0, 0, *n0.visible_devices[2:])), rm.nodes[1])
    bad = replace(rm, nodes=bad_nodes, ranks=replace(rm.ranks, nodes=bad_nodes))
    found = {c.name: c for c in checks.run_checks(bad, SITE)}
    assert not found["bijection"].ok
    assert found["bijection"].detail.startswith("16 ranks on 15 distinct")
    # the same map as a plain tuple is judged the same way
    as_tuple = replace(bad, ranks=tuple(bad.ranks))
    assert not {c.name: c for c in checks.run_checks(as_tuple, SITE)}["bijection"].ok


def test_two_nodes_with_one_node_rank_fail_the_bijection_check():
    rm = build_rank_map(SITE, HOSTS[:2], Layout(tp=8))
    nodes = (
        rm.nodes[0],
        NodePlacement(rm.nodes[1].hostname, 0, rm.nodes[1].supernode, rm.nodes[1].visible_devices),
    )
    bad = replace(rm, nodes=nodes, ranks=replace(rm.ranks, nodes=nodes))
    assert not {c.name: c for c in checks.run_checks(bad, SITE)}["bijection"].ok


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 12), st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4]))
def test_any_allocation_matches_the_tuple(k, tp, ep):
    hosts = HOSTS[-k:]
    rm = build_rank_map(SITE, hosts, Layout(tp=tp, ep=ep if (k * 8) % (tp * ep) == 0 else 1))
    assert tuple(rm.ranks) == _expected(rm)
