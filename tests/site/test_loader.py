"""Loading sites: the bundled configs, lookup by name, the model built, and the broken corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm_supernode.errors import ConfigError, InputError
from slurm_supernode.site import finder
from slurm_supernode.site.finder import find_site
from slurm_supernode.site.ip_patterns import render_pattern
from slurm_supernode.site.loader import load_file, load_site, parse_site
from tests.site.yaml_snippets import LINKS

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BUNDLED = sorted((ROOT / "site-configs").glob("*.yaml"))
BROKEN = HERE / "broken"
EXPECTED = json.loads((BROKEN / "EXPECTED.json").read_text())


def parse_ok(text: str):
    site, problems = parse_site(text, "t.yaml")
    assert not problems, [str(p) for p in problems]
    return site


def test_bundled_names():
    assert {p.stem for p in BUNDLED} >= {"local", "nvl72", "ascend-superpod", "ib-8gpu"}


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_bundled_sites_are_valid(path):
    site, problems = load_file(path)
    assert problems == []
    assert site.name == path.stem
    assert set(site.links) == {"node", "supernode", "inter"}
    for sn in site.supernodes:
        assert sn.nodes, sn.name
        for i, node in enumerate(sn.nodes):
            assert node.index == i and node.supernode == sn.name
            assert sorted(node.spec.device_order) == list(range(node.devices))


def test_local_site_shape():
    site = load_site("local")
    assert [sn.name for sn in site.supernodes] == ["sn0", "sn1"]
    assert site.supernode("sn1").hostnames == ("n4", "n5", "n6", "n7")
    assert site.devices == 64
    assert site.node("n5").spec.device_groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert dict(site.slurm.node_options) == {"NodeHostname": "localhost", "NodeAddr": "127.0.0.1"}
    assert site.slurm.partition == "main" and site.slurm.strategy == "auto"


def test_ascend_ips_and_pods():
    site = load_site("ascend-superpod")
    pod1 = site.supernode("pod1")
    assert pod1.super_pod_id == 1
    node = pod1.nodes[5]  # a3-014: second rack, slot 1
    assert (node.hostname, node.rack, node.slot) == ("a3-014", "pod1-r2", 1)
    assert node.device_ips[0] == "10.101.5.0" and node.device_ips[15] == "10.101.5.15"
    assert node.host_ip == "192.168.1.16"
    all_ips = [ip for n in site.nodes for ip in n.device_ips]
    assert len(all_ips) == len(set(all_ips)) == site.devices


def test_rack_order_is_physical_not_sorted():
    site = parse_ok(
        "name: t\nvendor: nvidia\nnode_defaults: {devices: 2}\n" + LINKS + "supernodes:\n"
        "  - name: a\n    racks:\n      - {name: r2, nodes: 'n[10-11]'}\n"
        "      - {name: r1, nodes: 'n[3,1]'}\n"
    )
    sn = site.supernode("a")
    assert sn.hostnames == ("n10", "n11", "n3", "n1")
    assert [(n.rack, n.slot) for n in sn.nodes] == [("r2", 0), ("r2", 1), ("r1", 0), ("r1", 1)]
    assert site.physical_position("n3") == (0, 2)


def test_override_precedence_and_shared_specs():
    site = parse_ok(
        "name: t\nvendor: nvidia\n" + LINKS + "node_defaults: {devices: 8, cpus: 16}\n"
        "supernodes:\n  - {name: a, nodes: 'n[0-3]'}\n"
        "  - {name: b, nodes: 'n[4-7]', node_defaults: {cpus: 32}}\n"
        "node_overrides:\n  - {nodes: 'n[3-4]', cpus: 64}\n  - {nodes: n4, memory_mb: 1000}\n"
    )
    cpus = {n.hostname: n.spec.cpus for n in site.nodes}
    assert cpus == {"n0": 16, "n1": 16, "n2": 16, "n3": 64, "n4": 64, "n5": 32, "n6": 32, "n7": 32}
    assert site.node("n4").spec.memory_mb == 1000 and site.node("n3").spec.memory_mb is None
    assert site.node("n0").spec is site.node("n1").spec  # specs are shared, not per node


def test_env_values_are_kept_as_written():
    site = parse_ok(
        "name: t\nvendor: nvidia\n" + LINKS + "node_defaults: {devices: 1}\n"
        "supernodes: [{name: a, nodes: n0}]\n"
        "env_profiles:\n  default: {A: 1, B: yes, C: 0x10, D: ''}\n"
    )
    assert site.env_profiles["default"].as_dict() == {"A": "1", "B": "yes", "C": "0x10", "D": ""}


def test_render_pattern():
    assert render_pattern("10.{pod+100}.{node}.{dev+1}", {"pod": 1, "node": 2, "dev": 3}) == (
        "10.101.2.4"
    )
    for bad in ("{x}", "{node:02d}", "{node+a}", "{node"):
        with pytest.raises(ValueError):
            render_pattern(bad, {"node": 1})


def test_explicit_ips_override_pattern():
    site = parse_ok(
        "name: t\nvendor: ascend\n" + LINKS + "node_defaults: {devices: 2}\n"
        "supernodes: [{name: a, nodes: 'x[0-1]'}]\n"
        "device_ips:\n  pattern: '10.0.{node}.{dev}'\n  nodes: {x1: [10.9.9.1, 10.9.9.2]}\n"
    )
    assert site.node("x0").device_ips == ("10.0.0.0", "10.0.0.1")
    assert site.node("x1").device_ips == ("10.9.9.1", "10.9.9.2")


# -- the broken corpus ----------------------------------------------------------------------
def test_corpus_is_complete():
    assert sorted(p.stem for p in BROKEN.glob("*.yaml")) == sorted(EXPECTED)
    assert len(EXPECTED) >= 15


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_broken_config(name):
    path = BROKEN / f"{name}.yaml"
    _, problems = load_file(path)
    assert problems, "expected problems"
    got = [(p.line, p.col, str(p)) for p in problems]
    wanted_locs = set()
    for item in EXPECTED[name]:
        line, col, fragment = item.split(":", 2)
        loc = (int(line), int(col))
        wanted_locs.add(loc)
        assert any((ln, c) == loc and fragment.strip() in text for ln, c, text in got), (
            f"{item!r} not in {[t for *_, t in got]}"
        )
    # no problem at an unexpected place (no cascades of follow-up errors)
    assert {(ln, c) for ln, c, _ in got} == wanted_locs
    for p in problems:
        assert p.file == str(path)
        assert str(p).startswith(f"{path}:{p.line}:{p.col}: ")


def test_load_site_raises_with_all_problems():
    with pytest.raises(ConfigError) as info:
        load_site(str(BROKEN / "unknown_vendor.yaml"))
    assert len(info.value.problems) == 2
    assert info.value.exit_code == 2


# -- finding sites ----------------------------------------------------------------------------
def test_find_site_by_path_name_and_env(tmp_path, monkeypatch):
    monkeypatch.setattr(finder, "SYSTEM_SITES_DIR", tmp_path / "etc")
    assert find_site("local").name == "local.yaml"
    own = tmp_path / "mine.yaml"
    own.write_text("x: 1\n")
    assert find_site(str(own)) == own
    monkeypatch.setenv("SNRUN_SITE", str(own))
    assert find_site(None) == own
    monkeypatch.setenv("SNRUN_SITE", "nvl72")
    assert find_site(None).name == "nvl72.yaml"


def test_system_sites_shadow_bundled(tmp_path, monkeypatch):
    (tmp_path / "local.yaml").write_text("x: 1\n")
    monkeypatch.setattr(finder, "SYSTEM_SITES_DIR", tmp_path)
    assert find_site("local") == tmp_path / "local.yaml"
    assert finder.available_sites()["local"] == tmp_path / "local.yaml"


def test_unknown_site_lists_names(monkeypatch, tmp_path):
    monkeypatch.setattr(finder, "SYSTEM_SITES_DIR", tmp_path)
    monkeypatch.delenv("SNRUN_SITE", raising=False)
    with pytest.raises(InputError) as info:
        find_site("nvl27")
    text = str(info.value)
    assert "unknown site 'nvl27'" in text and "did you mean 'nvl72'" in text and "local" in text
    with pytest.raises(InputError, match="no site given"):
        find_site(None)


def test_documented_example_is_valid():
    doc = (ROOT / "docs" / "site-config.md").read_text()
    example = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    site = parse_ok(example)
    assert site.supernode("nvl72-02").nodes[9].rack == "r02b"
    assert site.node("gb001").spec.memory_mb == 1700000


def test_super_node_ips_must_name_its_own_hosts():
    _, problems = parse_site(
        "name: t\nvendor: ascend\nnode_defaults: {devices: 1}\n" + LINKS + "supernodes:\n"
        "  - {name: a, nodes: x0, device_ips: {nodes: {x1: [10.0.0.1]}}}\n"
        "  - {name: b, nodes: x1}\n",
        "t.yaml",
    )
    assert [(p.line, p.col) for p in problems] == [(10, 38)]
    assert "host 'x1' is not in super node 'a'" in problems[0].message


def test_spares_are_loaded_and_checked() -> None:
    from slurm_supernode.site.loader import parse_site

    text = (
        "name: s\nvendor: nvidia\nsupernodes:\n"
        "  - {name: a, nodes: 'n[0-3]', spares: 1}\n"
        "  - {name: b, nodes: 'm[0-1]', spares: 2}\n"
        "node_defaults: {devices: 4}\n"
        "links:\n"
        "  node: {bandwidth_GBps: 1, latency_us: 1}\n"
        "  supernode: {bandwidth_GBps: 1, latency_us: 1}\n"
        "  inter: {bandwidth_GBps: 1, latency_us: 1}\n"
    )
    site, problems = parse_site(text, "s.yaml")
    assert [str(p) for p in problems] == [
        "s.yaml:5:40: super node 'b'.spares must be less than its 2 nodes, got 2 "
        "(hint: spares are nodes held in reserve inside the super node)"
    ]
    site, problems = parse_site(text.replace("spares: 2", "spares: 0"), "s.yaml")
    assert not problems and site is not None
    assert [(sn.spares, sn.job_size) for sn in site.supernodes] == [(1, 3), (0, 2)]


def test_restart_budgets_from_the_site():
    site = parse_ok(
        "name: t\nvendor: nvidia\nsupernodes:\n  - {name: sn0, nodes: 'n[0-1]'}\n"
        "node_defaults: {devices: 8}\n" + LINKS + "restarts: {app_error: 1, time_limit: 9}\n"
    )
    assert dict(site.restarts) == {"app_error": 1, "time_limit": 9}
    assert load_site("local").restarts == ()


def test_ascend_site_without_ips_or_pods_is_valid(tmp_path):
    """Device IPs, SDIDs and SuperPoD ids come from the hardware at job start: a site may leave
    them out (host_ip is optional for HCCL too)."""
    path = tmp_path / "a.yaml"
    path.write_text(
        "name: t\nvendor: ascend\nnode_defaults: {devices: 3}\n" + LINKS + "supernodes:\n"
        "  - {name: p0, nodes: 'a[0-1]'}\n  - {name: p1, nodes: 'a[2-3]'}\n"
    )
    site, problems = load_file(path)
    assert problems == [] and all(not n.device_ips and n.host_ip is None for n in site.nodes)
