"""Pure parts of the benchmark: option parsing, scope groups, nccl-tests arithmetic."""

from __future__ import annotations

import pytest

from slurm_supernode.bench.collectives import bandwidths, busbw_factor, element_count
from slurm_supernode.bench.groups import (
    RankIdentity,
    group_of,
    rank_identity,
    scope_groups,
    supernode_from_topology_addr,
)
from slurm_supernode.bench.measure_options import (
    format_size,
    parse_collectives,
    parse_dtypes,
    parse_scopes,
    parse_size,
    parse_sizes,
)
from slurm_supernode.errors import InputError


@pytest.mark.parametrize(
    ("text", "size"),
    [("1024", 1024), ("1K", 1024), ("64k", 65536), ("1MiB", 1 << 20), ("4GB", 4 << 30),
     ("0.5K", 512)],
)  # fmt: skip
def test_parse_size_binary_units(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "K", "-1K", "1X", "abc", "0", "1.3"])
def test_parse_size_rejects_with_option_name(text):
    with pytest.raises(InputError) as err:
        parse_size(text)
    assert err.value.where == "--sizes" and err.value.exit_code == 2


def test_parse_sizes_range_list_and_mix():
    assert parse_sizes("1K-8K") == (1024, 2048, 4096, 8192)
    assert parse_sizes("1K-64K", factor=4) == (1024, 4096, 16384, 65536)
    assert parse_sizes("1M,1K,1K") == (1024, 1 << 20)
    assert parse_sizes("1K-2K,1G") == (1024, 2048, 1 << 30)
    with pytest.raises(InputError):
        parse_sizes("8K-1K")


def test_dtypes_collectives_scopes():
    assert parse_dtypes("bf16,fp32,bfloat16") == ("bfloat16", "float32")
    assert parse_collectives("broadcast,allreduce") == ("all_reduce", "broadcast")
    assert parse_scopes("all") == ("node", "supernode", "inter", "world")
    for bad, fn in (("int8", parse_dtypes), ("allgatherv", parse_collectives)):
        with pytest.raises(InputError):
            fn(bad)
    assert format_size(3 << 20) == "3M" and format_size(1000) == "1000"


def test_busbw_factors_follow_nccl_tests():
    assert busbw_factor("all_reduce", 8) == pytest.approx(2 * 7 / 8)
    for coll in ("all_gather", "reduce_scatter", "all_to_all"):
        assert busbw_factor(coll, 4) == pytest.approx(3 / 4)
    assert busbw_factor("broadcast", 16) == 1.0
    assert busbw_factor("all_reduce", 1) == 0.0
    algbw, busbw = bandwidths("all_reduce", 1_000_000_000, 0.5, 2)
    assert (algbw, busbw) == pytest.approx((2.0, 2.0))
    algbw, busbw = bandwidths("all_gather", 3_000_000, 1e-3, 3)
    assert (algbw, busbw) == pytest.approx((3.0, 2.0))


def test_element_count_floors_chunked_collectives_to_the_group():
    # nccl-tests: size is the larger buffer, split evenly over n ranks for chunked ones
    assert element_count("all_gather", 1000, "float32", 3) == 249  # 250 -> 249 = 3 x 83
    assert element_count("all_reduce", 1000, "float32", 3) == 250
    assert element_count("reduce_scatter", 4, "bfloat16", 4) == 0


def _ids(layout):
    """layout: list of (node, supernode) per rank."""
    return [RankIdentity(r, f"h{node}", f"node{node}", sn) for r, (node, sn) in enumerate(layout)]


def test_scope_groups_two_supernodes_of_two_nodes_of_two_ranks():
    layout = [(r // 2, f"sn{r // 4}") for r in range(8)]
    ids = _ids(layout)
    assert scope_groups(ids, "node") == ((0, 1), (2, 3), (4, 5), (6, 7))
    assert scope_groups(ids, "supernode") == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert scope_groups(ids, "inter") == ((0, 4), (1, 5), (2, 6), (3, 7))
    assert scope_groups(ids, "world") == (tuple(range(8)),)
    assert group_of(scope_groups(ids, "inter"), 6) == 2


def test_scope_groups_follow_identity_not_rank_order():
    # super nodes interleaved in rank order; unequal sizes; singletons dropped
    ids = _ids([(0, "b"), (1, "a"), (2, "b"), (3, "a"), (4, "a")])
    assert scope_groups(ids, "supernode") == ((0, 2), (1, 3, 4))
    assert scope_groups(ids, "inter") == ((0, 1), (2, 3))
    assert scope_groups(ids, "node") == ()
    assert group_of(scope_groups(ids, "inter"), 4) is None


def test_unknown_supernode_disables_supernode_scopes():
    ids = _ids([(0, None), (0, None), (1, None), (1, None)])
    assert scope_groups(ids, "supernode") == () and scope_groups(ids, "inter") == ()
    assert scope_groups(ids, "node") == ((0, 1), (2, 3))


def test_topology_addr_and_env_precedence():
    assert supernode_from_topology_addr("spine.sn0.node01", "switch.switch.node") == "sn0"
    assert supernode_from_topology_addr("b1.node7", None) == "b1"
    assert supernode_from_topology_addr("node7", "node") is None
    env = {"RANK": "5", "GROUP_RANK": "2", "SLURM_TOPOLOGY_ADDR": "s.blockA.n1"}
    assert rank_identity(env, host="h").supernode == "blockA"
    assert rank_identity(env, host="h").node == "node2"
    assert rank_identity({**env, "SNRUN_SUPERNODE": "nvl0"}, host="h").supernode == "nvl0"
    assert rank_identity({"RANK": "5"}, supernode_size=4, host="h") == RankIdentity(
        5, "h", "h", "sn1"
    )
    assert rank_identity({"RANK": "5"}, host="h").supernode is None
