"""The printed minimum is the lexicographic minimum, and the rank map reaches it.

Reference side (no product placement code): groups come from the independent framework
reference (coordinate tables, torchtitan meshes); the minimum is a brute force over every
assignment of node slots to super nodes with the allocation's node counts, compared
lexicographically in priority order. The product's minimum (``optimum.minimum``) is computed
without the packer (no witness) and with it; the rank map's crossings must equal it.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_supernode.placement import optimum
from slurm_supernode.placement.checks import layout_problem
from slurm_supernode.placement.model import Layout
from slurm_supernode.placement.packing import place
from slurm_supernode.placement.rankmap import PACK_PRIORITY, build_rank_map, pack_lines
from slurm_supernode.placement.render import render_plan
from tests.placement.framework_reference import megatron_groups, torchtitan_groups
from tests.placement.sites import make_site, nvl72_site
from tests.placement.test_packing import assignments, random_site

ORDERS = ("tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp")


def reference_groups(world, tp, cp, ep, etp, pp, order, framework):
    if framework == "torchtitan":
        groups = torchtitan_groups(world, tp, cp, ep, etp, pp)
    else:
        groups = megatron_groups(world, tp, cp, ep, etp, pp, order)
    groups.pop("dp-cp")
    return groups


def crossings(groups, nproc, bins) -> dict[str, int]:
    return {d: sum(len({bins[r // nproc] for r in g}) > 1 for g in gs) for d, gs in groups.items()}


def brute_force(groups, nproc, capacities) -> tuple[int, ...]:
    best = None
    for bins in assignments(capacities):
        c = crossings(groups, nproc, bins)
        key = tuple(c[d] for d in PACK_PRIORITY)
        if best is None or key < best:
            best = key
    return best


def draw_layout(draw, world: int, nproc: int):
    """A layout the framework and snrun run on ``world`` ranks (tp, cp, ep, etp, pp random)."""
    divs = [d for d in range(1, world + 1) if world % d == 0]
    fits = [d for d in divs if nproc % d == 0 or d % nproc == 0]
    framework = draw(st.sampled_from(["megatron", "megatron", "torchtitan"]))
    order = ORDERS[0] if framework == "torchtitan" else draw(st.sampled_from(ORDERS))
    for _ in range(20):
        tp = draw(st.sampled_from(fits))
        cp, ep, pp = (draw(st.sampled_from(divs)) for _ in range(3))
        etp = draw(st.sampled_from(sorted({tp, 1, *fits})))
        if framework == "torchtitan" and ep == 1:
            etp = None
        problem = layout_problem(
            tp, cp, ep, pp, world=world, nproc=nproc, etp=etp, order=order, framework=framework
        )
        if problem is None:
            return Layout(tp=tp, cp=cp, ep=ep, pp=pp, etp=etp, order=order, framework=framework)
    return Layout(tp=1, framework=framework)


def derived(layout: Layout, world: int) -> Layout:
    from slurm_supernode.placement.layout import derived as fill

    return fill(layout, world)


def groups_of(lay: Layout, world: int):
    return reference_groups(
        world, lay.tp, lay.cp, lay.ep, lay.expert_tp, lay.pp, lay.order, lay.framework
    )


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=2, max_size=3).filter(lambda c: sum(c) <= 8),
    st.sampled_from([1, 2, 3, 4, 6, 8]),
    st.data(),
)
def test_minimum_equals_brute_force(capacities, nproc, data):
    """Every layout class, aligned or not (nproc 3 and 6 split groups unevenly), MoE too."""
    world = sum(capacities) * nproc
    lay = derived(draw_layout(data.draw, world, nproc), world)
    groups = groups_of(lay, world)
    want = brute_force(groups, nproc, capacities)
    lines = pack_lines(lay)
    alone = optimum.minimum(lines, nproc, capacities)  # no packer involved
    assert tuple(alone.per_dim[d] for d in PACK_PRIORITY) == want, (capacities, nproc, lay)
    bins, best = place(lines, nproc, capacities)
    assert tuple(best.per_dim[d] for d in PACK_PRIORITY) == want
    got = crossings(groups, nproc, bins)
    assert tuple(got[d] for d in PACK_PRIORITY) == want, (capacities, nproc, lay, bins)


def test_issue_example_minimum_and_plan_text():
    # 3 super nodes x 4 nodes x 8 GPUs, tp 8 pp 4: DP and PP conflict; lexicographic minimum
    # tp 0, dp 8 (three whole triples, the fourth spread), then pp 24 (all of them)
    site = make_site(3, 4, 8)
    rm = build_rank_map(site, [n.hostname for n in site.nodes], Layout(tp=8, pp=4))
    assert rm.crossing_min["dp"] == 8 and rm.crossing_min["pp"] == 24
    assert rm.crossing_min_by["dp"] == rm.crossing_min_by["pp"] == optimum.LOWER_BOUND
    assert rm.spans["dp"]["inter"] == 8 and rm.spans["pp"]["inter"] == 24
    text = render_plan(rm)
    assert "MIN-X-SN" in text and "X-SN-FLOOR" not in text
    row = next(line.split() for line in text.splitlines() if line.startswith("pp "))
    assert row[4:8] == ["24", "24", "24", "24"]  # GROUPS X-NODE X-SN MIN-X-SN
    assert "placement: at the minimum in every dimension" in text


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_rank_map_reaches_the_minimum(data):
    """Through build_rank_map: unequal and partial super nodes, interleaved names, fewer ranks
    per node than devices on uneven islands, MoE layouts; crossings == minimum == brute force."""
    site = random_site(data.draw)
    hosts = [n.hostname for n in site.nodes]
    k = data.draw(st.integers(2, min(8, len(hosts))))
    alloc = data.draw(st.permutations(hosts))[:k]
    nproc = data.draw(st.sampled_from([1, 2, 3, 4, 6, 8]))
    world = k * nproc
    lay = draw_layout(data.draw, world, nproc)
    rm = build_rank_map(site, alloc, lay, nproc)
    groups = groups_of(rm.layout, world)
    sn_index = {sn.name: i for i, sn in enumerate(site.supernodes)}
    bins = [sn_index[n.supernode] for n in rm.nodes]
    got = crossings(groups, nproc, bins)
    used = sorted({b for b in bins})
    caps = [bins.count(b) for b in used]
    want = brute_force(groups, nproc, caps)
    for dim, value in zip(PACK_PRIORITY, want, strict=True):
        assert got[dim] == rm.spans[dim].get("inter", 0) == rm.crossing_min[dim] == value
    # devices: a TP group that fits inside the island holding the node's ranks stays in it
    islands = site.nodes[0].spec.device_groups
    tp = rm.layout.tp
    if 1 < tp <= min(nproc, max(len(g) for g in islands)):  # the check counts the ranks
        where = {d: i for i, g in enumerate(islands) for d in g}
        split = sum(len({where[rm.ranks[r].device] for r in g}) > 1 for g in groups["tp"])
        check = next(c for c in rm.checks if c.name == "tp-in-island")
        assert check.ok == (split == 0)
        assert split == 0 or check.detail.startswith(f"{split} TP groups cross")
    if tp <= nproc <= max(len(g) for g in islands):
        where = {d: i for i, g in enumerate(islands) for d in g}
        for g in groups["tp"]:
            assert len({where[rm.ranks[r].device] for r in g}) == 1


def test_minimum_at_scale_is_proven_by_the_bound():
    # 40 NVL72 racks, the last one partial (712 nodes, 2,848 GPUs): every dimension at its bound
    site = nvl72_site(40)
    hosts = [n.hostname for n in site.nodes][:-8]
    for layout in (Layout(tp=4, pp=8), Layout(tp=8, pp=4), Layout(tp=4, cp=2, pp=4)):
        rm = build_rank_map(site, hosts, layout)
        for dim in PACK_PRIORITY:
            assert rm.crossing_min[dim] is not None, (layout, dim)
            assert rm.spans[dim].get("inter", 0) == rm.crossing_min[dim]
        assert set(rm.crossing_min_by.values()) == {optimum.LOWER_BOUND}


def test_conflict_at_scale_is_proven_by_the_bound_after_the_one_before():
    # the issue's conflict on 300 super nodes x 4 nodes x 8 GPUs with tp 8, cp 3, pp 4: CP
    # triples fill one per super node (100 cross), so every PP group crosses, which the PP
    # bound alone (0) cannot show; too large for the search
    site = make_site(300, 4, 8)
    rm = build_rank_map(site, [n.hostname for n in site.nodes], Layout(tp=8, cp=3, pp=4))
    groups = {d: rm.world_size // rm.layout.size(d) for d in ("cp", "pp")}
    assert rm.crossing_min["cp"] == 100 * 8 and rm.spans["cp"]["inter"] == 100 * 8
    assert rm.crossing_min["pp"] == groups["pp"] == rm.spans["pp"]["inter"]
    assert set(rm.crossing_min_by.values()) == {optimum.LOWER_BOUND}
    sets, regular = optimum.slot_sets(4, 2400, 8, 1200)
    cp_sets, _ = optimum.slot_sets(3, 8, 8, 1200)
    assert optimum.lower_bound(sets, regular, [4] * 300) == 0
    assert optimum.after_bound(sets, cp_sets, [4] * 300, 1200) == groups["pp"]


def test_bound_after_whole_groups_proves_dp_and_pp():
    # 18 + 16 + 18 nodes x 4 GPUs, tp 8 (two nodes), ep 8 etp 1, pp 2: every TP pair stays
    # whole, so a DP group (13 nodes, one of each pair of its stage) needs 26 nodes: all 16
    # cross; PP joins pairs into 4-node units, 4 + 4 + 4 of 13 fit: 8 PP groups cross
    caps = [18, 16, 18]
    lay = derived(Layout(tp=8, ep=8, etp=1, pp=2), sum(caps) * 4)
    bins, best = place(pack_lines(lay), 4, caps)
    assert best.per_dim["dp"] == 16 and best.per_dim["pp"] == 8
    assert set(best.method.values()) == {optimum.LOWER_BOUND}
    groups = groups_of(lay, sum(caps) * 4)
    got = crossings(groups, 4, bins)
    assert got["dp"] == 16 and got["pp"] == 8


def test_not_computed_is_said_not_guessed():
    # groups that split nodes unevenly (dp stride 2 over 8-rank nodes, block 100 ranks) on 25
    # nodes: no bound reached and the search exceeds its budget
    site = make_site(2, 18, 8)
    hosts = [n.hostname for n in site.nodes][:18] + [n.hostname for n in site.nodes][18:25]
    rm = build_rank_map(site, hosts, Layout(tp=2, pp=2, etp=1))
    assert rm.crossing_min["tp"] == 0
    assert rm.crossing_min["dp"] is None and rm.crossing_min_by["dp"] is None
    text = render_plan(rm)
    row = next(line.split() for line in text.splitlines() if line.startswith("dp "))
    assert row[7] == "n/c"
    assert "minimum: not computed for dp, edp, pp" in text


def test_search_budget_gives_up_rather_than_guess():
    # the issue example's DP and PP sets: found with the default budget, refused with 10 steps
    dp = optimum.slot_sets(3, 8, 8, 12)
    pp = optimum.slot_sets(4, 24, 8, 12)
    assert dp is not None and pp is not None and dp[1] and pp[1]  # regular
    assert optimum.search([dp[0], pp[0]], [4, 4, 4], budget=10) is None
    found = optimum.search([dp[0], pp[0]], [4, 4, 4])
    assert found is not None and found[0] == (8, 24)


def test_slot_sets_match_the_groups():
    # regular (stride a multiple of nproc, runs of whole nodes) and irregular shapes
    for size, stride, nproc, slots in [(4, 8, 8, 8), (4, 2, 4, 8), (3, 2, 4, 6), (2, 3, 4, 6)]:
        found = optimum.slot_sets(size, stride, nproc, slots)
        assert found is not None
        sets, _ = found
        world = slots * nproc
        want: dict[tuple[int, ...], int] = {}
        for base in range(world):
            if (base // stride) % size:
                continue
            key = tuple(sorted({(base + k * stride) // nproc for k in range(size)}))
            if len(key) > 1:
                want[key] = want.get(key, 0) + 1
        assert dict(sets) == want


def test_islands_that_hold_whole_tp_blocks_come_first():
    # islands of 3, 2 and 3 devices, tp=2 on all 8: island order (0-2, 3-4, 5-7) would split
    # two TP pairs over islands; the 2-device island first splits one (the fewest possible)
    site = make_site(2, 2, 8, device_groups=((0, 1, 2), (3, 4), (5, 6, 7)))
    rm = build_rank_map(site, [n.hostname for n in site.nodes], Layout(tp=2))
    assert rm.nodes[0].visible_devices == (3, 4, 0, 1, 2, 5, 6, 7)
    where = {d: i for i, g in enumerate(((0, 1, 2), (3, 4), (5, 6, 7))) for d in g}
    split = sum(
        where[rm.nodes[0].visible_devices[k]] != where[rm.nodes[0].visible_devices[k + 1]]
        for k in range(0, 8, 2)
    )
    assert split == 1
    check = next(c for c in rm.checks if c.name == "tp-in-island")
    assert check.detail == "4 TP groups cross device islands"  # 1 per node, 4 nodes
