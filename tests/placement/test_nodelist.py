"""`snrun plan --nodelist` takes Slurm hostlists only (through the project's hostlist wrapper).

ClusterShell's set operators (``&``, ``!``, ``^``) and ``@group`` look-ups are not Slurm
syntax: Slurm never writes them into ``SLURM_JOB_NODELIST`` and a group look-up may run site
commands. They are refused with one located line (exit 2), as are duplicate hosts.
"""

from __future__ import annotations

import pytest

import slurm_supernode.cli.plan as plan_cli
from slurm_supernode.cli.main import main
from slurm_supernode.errors import InputError, PlacementError
from slurm_supernode.placement.rankmap import build_rank_map, parse_hosts
from tests.placement.sites import make_site

SITE = make_site(2, 4, 8)  # n0..n7


@pytest.fixture
def site(monkeypatch):
    monkeypatch.setattr(plan_cli, "_load_site", lambda name: SITE)
    return SITE


@pytest.mark.parametrize(
    ("expr", "char"),
    [
        ("n[0-3]&n[2-5]", "&"),
        ("n[0-7]!n3", "!"),
        ("n[0-3]^n[2-5]", "^"),
        ("@sn0", "@"),
        ("n[0-3],@all", "@"),
        ("n0 n1", " "),
    ],
)
def test_clustershell_syntax_is_refused(site, capsys, expr, char):
    assert main(["plan", "--site", "x", "--nodelist", expr]) == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines[0].startswith(f"snrun plan: error: --nodelist: bad hostlist {expr!r}")
    assert f"character {char!r} is not allowed" in lines[0]
    assert "Traceback" not in err
    with pytest.raises(InputError, match="not allowed"):
        parse_hosts(expr)


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("n[0-3],n[4-7]", [f"n{i}" for i in range(8)]),
        ("n[7,0-2]", ["n7", "n0", "n1", "n2"]),
        ("n5,n[1-2]", ["n5", "n1", "n2"]),
    ],
)
def test_slurm_hostlists_expand_in_written_order(expr, expected):
    assert parse_hosts(expr) == expected


def test_string_and_list_forms_give_the_same_map():
    a = build_rank_map(SITE, "n[4-7],n[0-3]", None)
    b = build_rank_map(SITE, [f"n{i}" for i in range(8)], None)
    assert a == b
    assert [n.hostname for n in a.nodes] == [f"n{i}" for i in range(8)]


@pytest.mark.parametrize("hosts", ["n[0-3],n2", ["n0", "n1", "n1"]])
def test_duplicate_hosts_are_refused(hosts):
    with pytest.raises(PlacementError, match="duplicate hosts in the allocation: n"):
        parse_hosts(hosts)


def test_bad_ranges_are_located(site, capsys):
    assert main(["plan", "--site", "x", "--nodelist", "n[0-3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("snrun plan: error: --nodelist: bad hostlist 'n[0-3': missing ']'")
