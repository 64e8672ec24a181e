"""Infeasible layouts name the broken constraint and the nearest feasible ones; soft checks."""

from __future__ import annotations

import pytest

from slurm_supernode.errors import PlacementError
from slurm_supernode.placement.checks import layout_problem, nearest_feasible
from slurm_supernode.placement.model import Layout
from slurm_supernode.placement.rankmap import build_rank_map
from tests.placement.sites import make_site, nvl72_site

SITE = make_site(2, 4, 8, groups=2)
HOSTS8 = "n[0-7]"


def checks_of(rm):
    return {c.name: c for c in rm.checks}


def test_tp_not_dividing_node_suggests_neighbours():
    with pytest.raises(PlacementError) as exc:
        build_rank_map(SITE, HOSTS8, Layout(tp=3))
    text = str(exc.value)
    assert "tp=3 does not divide 8 devices per node" in text
    near = text.split("nearest feasible:")[1]
    assert "tp=2" in near and "tp=4" in near
    assert exc.value.exit_code == 2


def test_world_not_divisible_suggests_feasible_layouts():
    with pytest.raises(
        PlacementError, match=r"world_size \(56\) is not divisible by tp\*pp\*cp \(16\)"
    ) as exc:
        build_rank_map(SITE, "n[0-6]", Layout(tp=8, pp=2))
    near = str(exc.value).split("nearest feasible:")[1]
    for part in near.split(","):
        change = dict(kv.split("=") for kv in part.split())
        lay = {"tp": 8, "cp": 1, "ep": 1, "pp": 2} | {k: int(v) for k, v in change.items()}
        assert layout_problem(**lay, world=56, nproc=8) is None  # every suggestion works


def test_nearest_feasible_are_feasible_and_close():
    for layout, world, nproc in [
        (Layout(tp=3, pp=3), 64, 8),
        (Layout(tp=16, pp=5), 288, 4),
        (Layout(tp=6, cp=2), 48, 8),
    ]:
        near = nearest_feasible(layout, world, nproc)
        assert near
        for c in near:
            assert layout_problem(**c, world=world, nproc=nproc) is None
            changed = [d for d in c if c[d] != layout.size(d)]
            assert 1 <= len(changed) <= 2


def test_tp_larger_than_node_must_be_multiple():
    with pytest.raises(PlacementError, match="not a multiple"):
        build_rank_map(SITE, HOSTS8, Layout(tp=12))
    rm = build_rank_map(SITE, HOSTS8, Layout(tp=16))
    assert checks_of(rm)["tp-in-supernode"].ok


def test_given_dp_must_match():
    with pytest.raises(PlacementError, match="dp=3 does not match"):
        build_rank_map(SITE, HOSTS8, Layout(tp=8, dp=3))
    rm = build_rank_map(SITE, HOSTS8, Layout(tp=8, dp=8))
    assert rm.layout.dp == 8


def test_order_that_splits_tp_across_nodes_is_refused():
    # dp innermost with dp=8 strides TP groups over 8 ranks = a whole node apart.
    with pytest.raises(PlacementError, match="tp-in-node"):
        build_rank_map(SITE, HOSTS8, Layout(tp=2, order="dp-tp-cp-ep-pp"))


def test_tp_across_supernodes_is_reported_not_refused():
    site = make_site(8, 1, 4)  # eight one-node "super nodes": a plain cluster
    rm = build_rank_map(site, "n[0-7]", Layout(tp=8, pp=4))
    c = checks_of(rm)
    assert not c["tp-in-supernode"].ok
    assert not c["tp-cp-ep-divides-supernode"].ok
    assert "inter" in c["span-tp"].detail


def test_partial_supernodes_reported():
    rm = build_rank_map(SITE, "n[0-5]")
    c = checks_of(rm)["whole-supernodes"]
    assert not c.ok and "sn01" in c.detail
    assert checks_of(build_rank_map(SITE, HOSTS8))["whole-supernodes"].ok


def test_divides_supernode_check():
    site = nvl72_site(2)  # 72 devices per super node
    ok = build_rank_map(site, "n[00-35]", Layout(tp=8, pp=2))
    assert checks_of(ok)["tp-cp-ep-divides-supernode"].ok
    bad = build_rank_map(site, "n[00-35]", Layout(tp=16))
    assert not checks_of(bad)["tp-cp-ep-divides-supernode"].ok


def test_span_details_count_groups_per_level():
    rm = build_rank_map(SITE, HOSTS8, Layout(tp=8, pp=2))  # dp=4
    c = checks_of(rm)
    assert c["span-tp"].detail == "8 groups of 8: 8 node"
    assert c["span-dp"].detail == "16 groups of 4: 16 supernode"
    assert c["span-pp"].detail == "32 groups of 2: 32 inter"
    assert "no communication" in c["span-cp"].detail


def test_spare_trays_count_as_whole_and_set_the_size_that_must_divide():
    """NVL72 racks of 18 trays, 16 used + 2 spare: a job on 16 trays of each is whole, and
    its 64 devices per super node (not 72) are what tp*cp / etp*ep must divide."""
    import dataclasses

    site = nvl72_site(2)
    site = dataclasses.replace(
        site, supernodes=tuple(dataclasses.replace(sn, spares=2) for sn in site.supernodes)
    )
    used = "n[00-15],n[18-33]"
    c = checks_of(build_rank_map(site, used, Layout(tp=4, ep=16)))
    assert c["whole-supernodes"].ok and c["tp-cp-ep-divides-supernode"].ok
    assert "64 devices" in c["tp-cp-ep-divides-supernode"].detail
    # (tp*ep = 64 does not divide the rack's 72 devices: that was the wrong size)
    assert not checks_of(build_rank_map(site, "n[00-14],n[18-33]"))["whole-supernodes"].ok
