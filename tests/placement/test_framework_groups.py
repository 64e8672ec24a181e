"""The plan's groups equal Megatron-Core's for a grid of layouts (issue 13).

Grid: world 16..512, tp 1/2/4/8, cp 1/2, ep 1/2/4/8, etp = tp and 1, pp 1/2/4, Megatron's two
orders (torchtitan over the same grid, plus dp_replicate: test_torchtitan_layouts.py). For each
layout: snrun accepts it exactly when the framework does (the
reference in ``framework_reference.py``, written from the frameworks' rules, not from ours), and
when accepted every group of every dimension in the plan - from ``group_ranks``, from the JSON
``groups`` (size/stride), and from the per-rank coordinates - equals the framework's.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import pytest

from slurm_supernode.errors import PlacementError
from slurm_supernode.placement.checks import layout_problem
from slurm_supernode.placement.model import DENSE_DIMS, EXPERT_DIMS, GROUP_DIMS, Layout
from slurm_supernode.placement.rankmap import build_rank_map, group_ranks, rank_map_to_json
from tests.placement import framework_reference as ref
from tests.placement.sites import make_site

DEVICES = 8
WORLDS = (16, 32, 64, 128, 256, 512)
SITE = make_site(4, 16, DEVICES)  # 4 super nodes x 16 nodes x 8 devices = 512
HOSTS = [n.hostname for n in SITE.nodes]
ORDERS = ("tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp")


def grid_layouts():
    for tp, cp, ep, pp in itertools.product((1, 2, 4, 8), (1, 2), (1, 2, 4, 8), (1, 2, 4)):
        for etp in sorted({tp, 1}):
            for order in ORDERS:
                yield "megatron", tp, cp, ep, etp, pp, order


def _reference(framework, world, tp, cp, ep, etp, pp, order):
    assert framework == "megatron"
    if not ref.megatron_feasible(world, tp, cp, ep, etp, pp, order):
        return None
    return ref.megatron_groups(world, tp, cp, ep, etp, pp, order)


def _groups_from_json(doc, dim):
    """Rebuild a dimension's groups from the plan JSON's size and stride alone."""
    g = doc["groups"][dim]
    size, stride, world = g["size"], g["stride"], doc["world_size"]
    out = [
        [base + k * stride for k in range(size)]
        for base in range(world)
        if (base // stride) % size == 0
    ]
    assert len(out) == g["count"]
    return out


def _groups_from_coords(doc, dim):
    """Group ranks that share every other coordinate of the dimension's grid."""
    key, names = (
        ("expert_coords", EXPERT_DIMS)
        if dim in ("ep", "etp", "edp")
        else (
            "coords",
            DENSE_DIMS,
        )
    )
    by = defaultdict(list)
    for r in doc["ranks"]:
        c = r[key]
        by[tuple(c[n] for n in names if n != dim)].append(r["rank"])
    return sorted((sorted(g) for g in by.values()), key=lambda g: g[0])


@pytest.mark.parametrize("world", WORLDS)
def test_plan_groups_equal_the_frameworks(world):
    hosts = HOSTS[: world // DEVICES]
    checked = refused = 0
    for framework, tp, cp, ep, etp, pp, order in grid_layouts():
        want = _reference(framework, world, tp, cp, ep, etp, pp, order)
        lay = Layout(tp=tp, cp=cp, ep=ep, pp=pp, etp=etp, order=order, framework=framework)
        case = f"{framework} W={world} tp={tp} cp={cp} ep={ep} etp={etp} pp={pp} {order}"
        full = world <= 128  # the slow parts (refusal hints, per-rank coordinates) up to 128
        if want is None:
            if full:
                with pytest.raises(PlacementError):
                    build_rank_map(SITE, hosts, lay)
            else:
                assert layout_problem(
                    tp, cp, ep, pp, world, DEVICES, etp=etp, order=order, framework=framework
                ), case
            refused += 1
            continue
        rm = build_rank_map(SITE, hosts, lay)
        doc = rank_map_to_json(rm, ranks=full)
        for dim in GROUP_DIMS:
            assert group_ranks(rm, dim) == want[dim], (case, dim)
            assert _groups_from_json(doc, dim) == want[dim], (case, dim)
            if full:
                assert _groups_from_coords(doc, dim) == want[dim], (case, dim)
        assert group_ranks(rm, "dp-cp") == want["dp-cp"], case
        checked += 1
    assert checked > 100 and refused > 10  # the grid exercises both outcomes


def test_refusals_give_the_frameworks_reason():
    hosts = HOSTS[:4]  # 32 ranks
    cases = [
        (Layout(tp=8, cp=2, pp=4), r"world_size \(32\) is not divisible by tp\*pp\*cp \(64\)"),
        (
            Layout(tp=2, ep=8, pp=4),
            r"not divisible by expert_tensor_model_pipeline_parallel size etp\*ep\*pp \(64\)",
        ),
        (
            Layout(tp=2, cp=2, ep=4, pp=2, order="tp-cp-ep-pp-dp"),
            "data parallel size of the attention and moe layers must be the same",
        ),
    ]
    for lay, message in cases:
        with pytest.raises(PlacementError, match=message) as exc:
            build_rank_map(SITE, hosts, lay)
        assert "nearest feasible" in str(exc.value)
    with pytest.raises(PlacementError, match="one fixed order") as exc:
        build_rank_map(SITE, hosts, Layout(tp=2, order="tp-cp-ep-pp-dp", framework="torchtitan"))
    assert exc.value.hint and "--framework megatron" in exc.value.hint
    # the torchtitan layout the old rule refused (ep % (cp*tp)): today's torchtitan runs it
    rm = build_rank_map(SITE, hosts, Layout(tp=2, cp=2, ep=2, framework="torchtitan"))
    assert (rm.layout.dp_shard, rm.layout.efsdp) == (8, 16)


def test_layouts_the_old_model_got_wrong_now_run():
    hosts = HOSTS[:3]  # 24 ranks
    # tp*cp*ep*pp = 32 does not divide 24, but Megatron needs only tp*cp*pp | W, etp*ep*pp | W
    rm = build_rank_map(SITE, hosts, Layout(tp=2, cp=2, ep=8, etp=1, pp=1))
    assert (rm.layout.dp, rm.layout.edp) == (6, 3)
    # the same sizes with pp=2 and the tp-pp-dp mapping: Megatron asserts, so do we
    with pytest.raises(PlacementError, match="pp-last"):
        build_rank_map(SITE, hosts, Layout(tp=2, cp=2, ep=2, etp=1, pp=2, order="tp-cp-ep-pp-dp"))
    # ... unless etp*ep == tp*cp, where the expert and attention DP sizes agree
    ok = build_rank_map(SITE, HOSTS[:4], Layout(tp=2, cp=2, ep=4, etp=1, pp=2, order=ORDERS[1]))
    assert ok.layout.dp == ok.layout.edp == 4
