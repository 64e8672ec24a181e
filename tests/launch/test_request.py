from __future__ import annotations

import dataclasses

import pytest

from slurm_supernode.errors import InputError
from slurm_supernode.launch.jobspec import JobSpec
from slurm_supernode.launch.request import ClusterFacts, plan_request, whole_supernode_problems
from slurm_supernode.site.model import SlurmSettings
from tests.placement.sites import make_site


def site(strategy: str = "features", **kw):
    s = make_site(2, 4, 8, 2, **kw)
    slurm = SlurmSettings(partition="main", strategy=strategy, small_jobs="whole")
    return dataclasses.replace(s, slurm=slurm)


def spec(**kw) -> JobSpec:
    return JobSpec(program="train.py", **kw)


def arg(args, prefix):
    return [a for a in args if a.startswith(prefix)]


def test_one_supernode_is_matching_or_constraint() -> None:
    req = plan_request(spec(), site())
    assert req.nodes == 4 and req.supernodes == 1 and not req.heterogeneous
    comp = req.components[0]
    assert "--nodes=4" in comp and "--constraint=[sn00|sn01]" in comp
    assert "--exclusive" in comp and "--partition=main" in comp


def test_k_supernodes_is_a_het_job_of_whole_supernodes() -> None:
    req = plan_request(spec(supernodes=2), site())
    assert req.heterogeneous and len(req.components) == 2 and req.nodes == 8
    args = req.sbatch_args()
    assert args.count(":") == 1
    assert arg(args, "--constraint") == ["--constraint=[sn00|sn01]"] * 2
    assert args.count("--exclusive") == 2
    # job-wide options only once, in the first component
    assert len(arg(args, "--job-name")) == 1


def test_nodes_round_up_with_notice_or_stay_partial() -> None:
    req = plan_request(spec(nodes=5), site())
    assert req.nodes == 8 and req.supernodes == 2
    assert any("rounded -N 5 up to 8" in n for n in req.notices)
    part = plan_request(spec(nodes=3, allow_partial=True), site())
    assert part.nodes == 3 and part.supernodes is None and part.strategy == "partial"
    assert "--constraint=[sn00|sn01]" in part.components[0]  # still inside one super node


def test_small_jobs_aligned_site_keeps_counts_inside_one_super_node() -> None:
    """slurm.small_jobs: aligned: snrun -N 3 gets what plain sbatch -N 3 gets from the plugin
    (3 nodes in one super node); over one super node it still rounds to whole ones."""
    s = site()
    aligned = dataclasses.replace(s, slurm=dataclasses.replace(s.slurm, small_jobs="aligned"))
    three = plan_request(spec(nodes=3), aligned)
    assert (three.nodes, three.supernodes, three.strategy) == (3, None, "partial")
    assert "--constraint=[sn00|sn01]" in three.components[0]
    assert any("inside one super node" in n for n in three.notices), three.notices
    five = plan_request(spec(nodes=5), aligned)
    assert (five.nodes, five.supernodes) == (8, 2)
    assert plan_request(spec(nodes=3), s).nodes == 4  # whole (the default) rounds


def test_request_that_can_never_run_is_refused() -> None:
    with pytest.raises(InputError, match="needs 3 whole super nodes but .* has only 2"):
        plan_request(spec(supernodes=3), site())
    with pytest.raises(InputError, match="needs 3 whole super nodes"):
        plan_request(spec(nodes=9), site())
    with pytest.raises(InputError, match="either -S/--supernodes or -N/--nodes"):
        plan_request(spec(nodes=4, supernodes=1), site())
    with pytest.raises(InputError, match="bad time limit"):
        plan_request(spec(time="tomorrow"), site())


def test_partition_facts_limit_the_pool() -> None:
    facts = ClusterFacts(
        partition_nodes={
            "main": ("n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"),
            "half": ("n0", "n1", "n2", "n3", "n4"),
        },
        default_partition="main",
    )
    req = plan_request(spec(partition="half"), site(), facts)
    assert req.candidates == ("sn00",)  # sn01 is not wholly inside 'half'
    with pytest.raises(InputError, match="has only 1"):
        plan_request(spec(partition="half", supernodes=2), site(), facts)
    with pytest.raises(InputError, match="partition 'nope' does not exist.*valid: half, main"):
        plan_request(spec(partition="nope"), site(), facts)


def test_block_strategy_uses_segment_or_falls_back() -> None:
    new = ClusterFacts(version=(24, 11, 0), topology_plugin="topology/block", supports_segment=True)
    req = plan_request(spec(supernodes=2), site("block"), new)
    assert req.strategy == "block" and "--segment=4" in req.components[0]
    assert "--nodes=8" in req.components[0] and not req.heterogeneous
    # the job's blocks are its own (spares stay free for its requeue); node-exclusive too
    assert "--exclusive=topo" in req.components[0] and "--exclusive" not in req.components[0]
    shared = plan_request(spec(supernodes=2, exclusive=False), site("block"), new)
    assert not any(a.startswith("--exclusive") for a in shared.components[0])
    old = ClusterFacts(version=(22, 5, 8), topology_plugin="topology/tree")
    req = plan_request(spec(supernodes=2), site("block"), old)
    assert req.strategy == "features" and req.heterogeneous
    assert any("needs >= 24.05" in n for n in req.notices)


def test_auto_detects_from_running_slurm() -> None:
    feats = {f"n{i}": frozenset({f"sn0{i // 4}"}) for i in range(8)}
    tree = ClusterFacts(topology_plugin="topology/tree", node_features=feats)
    assert plan_request(spec(), site("auto"), tree).strategy == "features"
    bare = ClusterFacts(topology_plugin="topology/tree", node_features={})
    req = plan_request(spec(supernodes=2), site("auto"), bare)
    assert req.strategy == "switches" and "--switches=2" in req.components[0]
    block = ClusterFacts(topology_plugin="topology/block", supports_segment=True)
    assert plan_request(spec(), site("auto"), block).strategy == "block"
    # 26.05 with topology.yaml: show config says topology/flat, the blocks are there
    flat = ClusterFacts(topology_plugin="topology/flat", supports_segment=True, has_block=True)
    assert plan_request(spec(supernodes=2), site("auto"), flat).strategy == "block"
    assert plan_request(spec(supernodes=2), site("block"), flat).strategy == "block"
    no_blocks = ClusterFacts(topology_plugin="topology/flat", supports_segment=True)
    assert plan_request(spec(supernodes=2), site("block"), no_blocks).strategy == "features"


def test_whole_supernode_problems() -> None:
    s = site()
    assert whole_supernode_problems(s, [f"n{i}" for i in range(8)]) == []
    probs = whole_supernode_problems(s, ["n0", "n1", "n2", "n4", "n5", "n6", "n7", "zz"])
    assert any("sn00: 3 of 4 nodes allocated (missing n3)" in p for p in probs)
    assert any("zz is not in site" in p for p in probs)


def test_sbatch_passthrough_comes_last_in_every_component() -> None:
    req = plan_request(spec(supernodes=2, sbatch_args=("--gres=gpu:2", "--reservation=r")), site())
    for comp in req.components:
        assert comp[-2:] == ("--gres=gpu:2", "--reservation=r")
        assert comp.index("--gres=gpu:8") < comp.index("--gres=gpu:2")  # the later one wins


def test_spare_nodes_leave_room_to_replace_a_bad_node_inside_the_supernode() -> None:
    s = site()
    with_spares = dataclasses.replace(
        s, supernodes=tuple(dataclasses.replace(sn, spares=1) for sn in s.supernodes)
    )
    req = plan_request(spec(supernodes=2), with_spares)
    assert req.nodes == 6 and all("--nodes=3" in c for c in req.components)
    # 3 of sn00's 4 nodes (n1 excluded after a failure) still count as the whole super node
    assert whole_supernode_problems(with_spares, ["n0", "n2", "n3"]) == []
    probs = whole_supernode_problems(with_spares, ["n0", "n2"])
    assert probs == ["super node sn00: 2 of 3 nodes allocated, 1 spare (missing n1,n3)"]


def test_requeue_is_expedited_only_where_the_cluster_allows_it() -> None:
    """`--requeue=expedite` where detection found it, the plain `--requeue` elsewhere (an
    unsupported option would make sbatch refuse the whole job)."""
    fast = ClusterFacts(version=(26, 5, 5), expedited_requeue=True)
    req = plan_request(spec(), site(), fast)
    assert "--requeue=expedite" in req.job_args and "--requeue" not in req.job_args
    for facts in (ClusterFacts(version=(26, 5, 5)), ClusterFacts(version=(24, 11, 5)), None):
        args = plan_request(spec(), site(), facts).job_args
        assert "--requeue" in args and "--requeue=expedite" not in args
