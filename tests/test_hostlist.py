"""Hostlist wrappers: order-keeping expansion, folding, and their round trips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_supernode.hostlist import (
    HostlistError,
    expand,
    expand_paths,
    fold,
    fold_ordered,
    sort_hosts,
)


def test_expand_keeps_written_order_and_duplicates():
    assert expand("n[3,1-2],x,n3") == ["n3", "n1", "n2", "x", "n3"]
    assert expand("gb[008-011]") == ["gb008", "gb009", "gb010", "gb011"]
    assert expand("r[1-2]-gpu") == ["r1-gpu", "r2-gpu"]
    # unpadded ends of different widths and padded ends of one width are Slurm syntax
    assert expand("n[8-10]") == ["n8", "n9", "n10"]
    assert expand("n[0-10]")[-2:] == ["n9", "n10"]
    assert expand("n[08-10]") == ["n08", "n09", "n10"]
    with pytest.raises(HostlistError):  # ClusterShell steps are not Slurm syntax
        expand("n[1-5/2]")


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("n[1-", "missing ']'"),
        ("n]", "unmatched ']'"),
        ("n[1-2],,x", "empty host name"),
        ("n[a-b]", "range 'a-b' in 'n[a-b]' is not N or LO-HI"),
        ("n[3-1]", "range '3-1' in 'n[3-1]' goes backwards"),
        ("n[01-100]", "pads 01 to 2 digits but not 100"),
        ("gb[001-18]", "pads 001 to 3 digits but not 18"),
        ("gb[1-018]", "pads 018 to 3 digits but not 1"),
        ("gb[0-010]", "pads 010 to 3 digits but not 0"),
        ("gb[1-2,9-010]", "pads 010 to 3 digits but not 9"),
        ("r[1-2]gb[1-018]", "pads 018 to 3 digits but not 1"),
        ("n[1-2-3]", "is not N or LO-HI"),
        ("n[1-4/2]", "'/' is not allowed in a hostlist (position 6"),
        ("n=1", "'=' is not allowed in a hostlist (position 2"),
        ("n\n1", "'\\n' is not allowed in a hostlist (position 2"),
        ("nö", "'ö' is not allowed in a hostlist (position 2"),
        ("n[]", "empty range"),
        ("@group", "'@' is not allowed in a hostlist (position 1"),
        ("n[1-2]!n1", "'!' is not allowed in a hostlist (position 7"),
        ("[1-2]", "no host name prefix"),
        ("n[0-99999999]", "more than"),
        ("a[0-9999]b[0-9999]", "more than"),
        ("", "empty hostlist"),
    ],
)
def test_expand_rejects(expr, fragment):
    with pytest.raises(HostlistError, match=None) as info:
        expand(expr)
    assert fragment in str(info.value)


def test_fold_ordered_keeps_order():
    hosts = ["n4", "n5", "n6", "n0", "n1", "x", "n2"]
    folded = fold_ordered(hosts)
    assert expand(folded) == hosts
    assert folded.count(",") >= 2  # it had to break the run twice
    assert fold_ordered(["n1", "n2", "n3"]) == "n[1-3]"
    with pytest.raises(ValueError):
        fold_ordered(["n1", "n1"])


_prefixes = st.sampled_from(["n", "gb", "a3-", "rack1-n", "login"])
_host = st.builds(
    lambda p, i: p if p == "login" else (f"{p}{i:03d}" if p == "gb" else f"{p}{i}"),
    _prefixes,
    st.integers(0, 300),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_host, min_size=1, max_size=60))
def test_fold_round_trip_as_sets(hosts):
    assert set(expand(fold(hosts))) == set(hosts)
    assert len(expand(fold(hosts))) == len(set(hosts))


@settings(max_examples=60, deadline=None)
@given(st.lists(_host, min_size=1, max_size=60, unique=True))
def test_fold_ordered_round_trip_keeps_order(hosts):
    assert expand(fold_ordered(hosts)) == hosts


@settings(max_examples=60, deadline=None)
@given(st.lists(_host, min_size=1, max_size=40))
def test_expand_of_plain_list_is_identity(hosts):
    assert expand(",".join(hosts)) == hosts


def test_expand_paths_allows_slash_but_not_set_operators():
    assert expand_paths("/dev/nvidia[0-2]") == ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2"]
    with pytest.raises(HostlistError):
        expand_paths("/dev/nvidia[0-1]&/dev/x")
    with pytest.raises(HostlistError):
        expand("/dev/nvidia[0-1]")  # '/' is no hostname character


def test_sort_hosts_is_natural_order_without_duplicates():
    assert sort_hosts(["n10", "n2", "n2", "a1"]) == ["a1", "n2", "n10"]


def test_string_allocation_with_duplicates_is_refused():
    from slurm_supernode.errors import PlacementError
    from slurm_supernode.placement.rankmap import parse_hosts

    assert parse_hosts("n[3,1]") == ["n3", "n1"]
    with pytest.raises(PlacementError, match="duplicate"):
        parse_hosts("n[0-3],n1")


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 5000),
    st.integers(0, 300),
    st.integers(1, 6),
    st.booleans(),
    st.sampled_from(["", "-ib", ".x"]),
)
def test_one_range_expands_as_clustershell_does(lo, span, width, pad, suffix):
    """The LO-HI fast path (no RangeSet) gives NodeSet's names, padded or not, in order."""
    from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet

    hi = lo + span
    if pad:
        w = max(width, len(str(hi)))
        r = f"{lo:0{w}d}-{hi:0{w}d}"
    else:
        r = f"{lo}-{hi}"
    expr = f"gb[{r}]{suffix}"
    want = list(NodeSet(expr, resolver=RESOLVER_NOGROUP))
    assert expand(expr) == want
