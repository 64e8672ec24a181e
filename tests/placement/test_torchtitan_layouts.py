"""torchtitan layouts as today's torchtitan accepts them, with its groups (issue 28).

Grid (issue 13's, plus HSDP): world 16..512, tp 1/2/4/8, cp 1/2, ep 1/2/4/8, etp = tp and 1,
pp 1/2/4, dp_replicate 1/2. For each layout snrun accepts it exactly when the reference does
(``framework_reference``: torchtitan's ``ParallelDims._validate``), and when accepted every group
snrun names equals the group torchtitan's DeviceMesh forms (row-major mesh reshapes there, snrun's
mixed-radix strides here). The plan JSON and the per-rank coordinates are checked on the small
worlds, where building whole rank maps stays cheap.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections import defaultdict

import pytest

from slurm_supernode.cli.main import main
from slurm_supernode.errors import PlacementError
from slurm_supernode.placement import layout as grids
from slurm_supernode.placement.checks import layout_problem
from slurm_supernode.placement.model import HSDP_DIMS, Layout, group_dims
from slurm_supernode.placement.rankmap import build_rank_map, group_ranks, rank_map_to_json
from tests.placement import framework_reference as ref
from tests.placement.sites import make_site

DEVICES = 8
WORLDS = (16, 32, 64, 128, 256, 512)
SITE = make_site(4, 16, DEVICES)  # 4 super nodes x 16 nodes x 8 devices = 512
HOSTS = [n.hostname for n in SITE.nodes]
# every group snrun reports for torchtitan, and torchtitan's fsdp (dp_shard x cp) and loss
# (dp x cp) meshes as snrun composes them
COMPARED = (*group_dims("torchtitan"), "dp-cp", "dp_shard-cp")


def grid_layouts():
    for tp, cp, ep, pp, dr in itertools.product(
        (1, 2, 4, 8), (1, 2), (1, 2, 4, 8), (1, 2, 4), (1, 2)
    ):
        for etp in sorted({tp, 1}):
            yield tp, cp, ep, etp, pp, dr


def _groups_from_json(doc, dim):
    """A dimension's groups rebuilt from the plan JSON's size and stride alone."""
    g = doc["groups"][dim]
    size, stride = g["size"], g["stride"]
    out = [
        [base + k * stride for k in range(size)]
        for base in range(doc["world_size"])
        if (base // stride) % size == 0
    ]
    assert len(out) == g["count"]
    return out


def _groups_from_coords(doc, dim):
    """Ranks that share every other coordinate of the dimension's grid (HSDP parts aside)."""
    key = "expert_coords" if grids.grid_of(dim) == "expert" else "coords"
    whole = {"dp_shard": "dp", "efsdp": "edp"}.get(dim)
    by = defaultdict(list)
    for r in doc["ranks"]:
        c = r[key]
        if dim == "dp_replicate":  # the high digit of dp: the other digits are dp_shard's
            names = [n for n in c if n not in ("dp", "edp", "dp_replicate")]
        elif whole:  # the low digit of dp / edp: dp_replicate stays, the whole digit goes
            names = [n for n in c if n not in (dim, whole)]
        else:
            names = [n for n in c if n != dim and n not in HSDP_DIMS]
        by[tuple(c[n] for n in names)].append(r["rank"])
    return sorted(by.values())


@pytest.mark.parametrize("world", WORLDS)
def test_accept_refuse_and_groups_equal_torchtitans(world):
    accepted = refused = 0
    for tp, cp, ep, etp, pp, dr in grid_layouts():
        case = f"W={world} tp={tp} cp={cp} ep={ep} etp={etp} pp={pp} dp_replicate={dr}"
        feasible = ref.torchtitan_feasible(world, tp, cp, ep, etp, pp, dr)
        problem = layout_problem(
            tp, cp, ep, pp, world, DEVICES, etp=etp, framework="torchtitan", dp_replicate=dr
        )
        assert (problem is None) == feasible, (case, problem)
        if not feasible:
            refused += 1
            continue
        accepted += 1
        lay = Layout(tp=tp, cp=cp, ep=ep, pp=pp, etp=etp, framework="torchtitan", dp_replicate=dr)
        lay = grids.derived(lay, world)
        want = ref.torchtitan_groups(world, tp, cp, ep, etp, pp, dr)
        for dim in COMPARED:
            assert grids.groups(lay, dim, world) == want[dim], (case, dim)
    # the grid exercises both outcomes, HSDP and EP with etp = 1 included
    assert accepted > 50 and refused > 10, (accepted, refused)


@pytest.mark.parametrize("world", (16, 32))
def test_plan_json_and_coordinates_name_the_same_groups(world):
    hosts = HOSTS[: world // DEVICES]
    for tp, cp, ep, etp, pp, dr in grid_layouts():
        if not ref.torchtitan_feasible(world, tp, cp, ep, etp, pp, dr):
            continue
        lay = Layout(tp=tp, cp=cp, ep=ep, pp=pp, etp=etp, framework="torchtitan", dp_replicate=dr)
        rm = build_rank_map(SITE, hosts, lay)
        doc = rank_map_to_json(rm)
        want = ref.torchtitan_groups(world, tp, cp, ep, etp, pp, dr)
        layout = doc["layout"]
        assert (layout["dp_replicate"], layout["dp"], layout["edp"]) == (
            dr,
            len(want["dp"][0]),
            len(want["edp"][0]),
        )
        assert (layout["dp_shard"], layout["efsdp"]) == (
            len(want["dp_shard"][0]),
            len(want["efsdp"][0]),
        )
        for dim in group_dims("torchtitan"):
            case = (f"W={world} tp={tp} cp={cp} ep={ep} etp={etp} pp={pp} dr={dr}", dim)
            assert group_ranks(rm, dim) == want[dim], case
            assert _groups_from_json(doc, dim) == want[dim], case
            assert _groups_from_coords(doc, dim) == want[dim], case


def test_refusals_give_torchtitans_reason():
    hosts = HOSTS[:4]  # 32 ranks
    cases = [
        (Layout(tp=4, ep=2, etp=4), "has no expert tensor parallelism"),
        (Layout(tp=2, cp=2, ep=32, pp=2), r"expert_parallel_degree \(32\) must divide"),
        (Layout(tp=8, cp=2, dp_replicate=4), r"Invalid parallel dims: dp_replicate\(4\)"),
        (Layout(tp=2, ep=32, dp_replicate=2), r"dp_shard \* cp \* tp \(16\)"),
    ]
    for lay, message in cases:
        lay = dataclasses.replace(lay, framework="torchtitan")
        with pytest.raises(PlacementError, match=message) as exc:
            build_rank_map(SITE, hosts, lay)
        assert "nearest feasible" in str(exc.value)
    with pytest.raises(PlacementError, match="one fixed order") as exc:
        build_rank_map(SITE, hosts, Layout(tp=2, order="tp-cp-ep-pp-dp", framework="torchtitan"))
    with pytest.raises(PlacementError, match="Megatron-Core has no such layout option"):
        build_rank_map(SITE, hosts, Layout(tp=2, dp_replicate=2))


def test_the_issue_example_is_accepted_with_torchtitans_meshes(capsys):
    argv = ["plan", "--site", "nvl72", "--nodelist", "gb[001-004]", "--tp", "2", "--cp", "2"]
    assert main([*argv, "--ep", "2", "--framework", "torchtitan", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # 16 ranks: dp_shard = 4, expert mesh (pp 1, dp_replicate 1, efsdp 8, ep 2)
    assert {k: doc["layout"][k] for k in ("dp_shard", "efsdp", "edp", "etp")} == {
        "dp_shard": 4,
        "efsdp": 8,
        "edp": 8,
        "etp": 1,
    }
    assert _groups_from_json(doc, "ep")[:1] == [[0, 1]]
    assert _groups_from_json(doc, "efsdp")[0] == list(range(0, 16, 2))
    # HSDP: two replicas of dp_shard 2
    assert main([*argv, "--ep", "2", "--framework", "torchtitan", "--dp-replicate", "2"]) == 0
    out = capsys.readouterr().out
    assert "HSDP dp_replicate=2 dp_shard=2 efsdp=4" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dp-replicate", "2"], "--dp-replicate: --dp-replicate 2 is torchtitan's HSDP degree"),
        (["--dp-replicate", "0", "--framework", "torchtitan"], "--dp-replicate: must be >= 1"),
        (
            ["--dp-replicate", "3", "--framework", "torchtitan"],
            "layout: torchtitan: Invalid parallel dims: dp_replicate(3) * dp_shard(2)",
        ),
        (
            ["--tp", "2", "--ep", "2", "--etp", "2", "--framework", "torchtitan"],
            "layout: torchtitan has no expert tensor parallelism",
        ),
    ],
)
def test_cli_refusals_are_one_line(capsys, args, message):
    try:
        code = main(["plan", "--site", "nvl72", "--nodelist", "gb[001-002]", *args])
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "Traceback" not in err and "\n" not in err


@pytest.mark.parametrize(
    "lay",
    [
        Layout(tp=8, dp_replicate=2),
        Layout(tp=4, ep=4, dp_replicate=2),
        Layout(tp=2, cp=2, ep=2, pp=2, dp_replicate=2),
        Layout(tp=4, dp_replicate=4),
    ],
    ids=lambda lay: f"tp{lay.tp}-cp{lay.cp}-ep{lay.ep}-pp{lay.pp}-dr{lay.dp_replicate}",
)
def test_hsdp_packing_reaches_the_brute_force_minimum(lay):
    """Uneven super nodes (3 + 5 nodes): the packing keeps dp_shard (then efsdp) groups inside
    super nodes before whole dp groups, and reaches the lexicographic minimum of every
    dimension in that order (brute force over every node -> super node assignment)."""
    from slurm_supernode.placement.rankmap import HSDP_PACK_PRIORITY
    from tests.placement.test_packing import assignments

    hosts = HOSTS[0:3] + HOSTS[16:21]
    world = len(hosts) * DEVICES
    lay = dataclasses.replace(lay, framework="torchtitan")
    rm = build_rank_map(SITE, hosts, lay)
    want = ref.torchtitan_groups(world, lay.tp, lay.cp, lay.ep, None, lay.pp, lay.dp_replicate)

    def crossings(bins):
        return tuple(
            sum(len({bins[r // DEVICES] for r in g}) > 1 for g in want[d])
            for d in HSDP_PACK_PRIORITY
        )

    best = min(crossings(bins) for bins in assignments([3, 5]))
    sn_of = {n.supernode for n in rm.nodes}
    first = next(n.supernode for n in rm.nodes if n.hostname == hosts[0])
    got = crossings([0 if n.supernode == first else 1 for n in rm.nodes])
    assert len(sn_of) == 2 and got == best
    assert got == tuple(rm.crossing_min[d] for d in HSDP_PACK_PRIORITY)
    assert got == tuple(rm.spans[d].get("inter", 0) for d in HSDP_PACK_PRIORITY)
