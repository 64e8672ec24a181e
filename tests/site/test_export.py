"""Exporters: golden files for every bundled site and format, plus targeted behaviour.

Regenerate the golden files after an intended change with
``SNRUN_REGEN_GOLDEN=1 python3 -m pytest tests/site/test_export.py`` and review the diff.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
import yaml

from slurm_supernode.errors import InputError
from slurm_supernode.fsutil import write_atomic
from slurm_supernode.hostlist import expand
from slurm_supernode.site.export import (
    EXPORTERS,
    SlurmTarget,
    export,
    export_warnings,
    parse_target,
)
from slurm_supernode.site.loader import load_file, parse_site
from tests.site.yaml_snippets import LINKS

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
GOLDEN = HERE / "golden"
SITES = sorted(p.stem for p in (ROOT / "site-configs").glob("*.yaml"))
REGEN = os.environ.get("SNRUN_REGEN_GOLDEN") == "1"


def bundled(name: str):
    site, problems = load_file(ROOT / "site-configs" / f"{name}.yaml")
    assert not problems
    # the source path differs per checkout; keep golden JSON stable
    return dataclasses.replace(site, source=f"site-configs/{name}.yaml")


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if REGEN:
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}; run with SNRUN_REGEN_GOLDEN=1"
    assert text == path.read_text(), f"{name} differs from its golden copy"


@pytest.mark.parametrize("fmt", list(EXPORTERS))
@pytest.mark.parametrize("site_name", SITES)
def test_golden(site_name, fmt):
    text = export(bundled(site_name), fmt)
    assert text == export(bundled(site_name), fmt)  # deterministic
    check_golden(f"{site_name}.{fmt}", text)


def test_golden_local_ports():
    check_golden("local.slurm-nodes-ports", export(bundled("local"), "slurm-nodes", 17000))


def _kv(line: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in line.split())


@pytest.mark.parametrize("site_name", SITES)
def test_tree_and_block_cover_every_node_once(site_name):
    site = bundled(site_name)
    for fmt, key in (("topology-tree", "SwitchName"), ("topology-block", "BlockName")):
        seen: list[str] = []
        for line in export(site, fmt).splitlines():
            if line.startswith(key) and "Nodes=" in line:
                kv = _kv(line)
                assert tuple(sorted(expand(kv["Nodes"]))) == tuple(
                    sorted(site.supernode(kv[key]).hostnames)
                )
                seen += expand(kv["Nodes"])
        assert sorted(seen) == sorted(n.hostname for n in site.nodes)


def test_block_sizes_follow_slurm_rules():
    text = export(bundled("nvl72"), "topology-block")
    sizes = [int(x) for x in text.split("BlockSizes=")[1].split(",")]
    assert sizes[0] == 18  # base = super node size
    assert all(s % sizes[0] == 0 and (s // sizes[0]).bit_count() == 1 for s in sizes)
    assert sizes == sorted(set(sizes)) and sizes[-1] // sizes[0] <= 4  # 4 super nodes


def test_topology_yaml_structure():
    site = bundled("nvl72")
    docs = yaml.safe_load(export(site, "topology-yaml"))
    by_name = {d["topology"]: d for d in docs}
    assert by_name["block"]["cluster_default"] is True  # strategy block
    assert by_name["tree"]["cluster_default"] is False
    blocks = by_name["block"]["block"]["blocks"]
    assert [b["block"] for b in blocks] == [sn.name for sn in site.supernodes]
    switches = by_name["tree"]["tree"]["switches"]
    assert switches[-1]["switch"] == "ib-spine"
    assert sorted(expand(switches[-1]["children"])) == sorted(sn.name for sn in site.supernodes)


def test_slurm_nodes_features_gres_and_partition():
    site = bundled("ib-8gpu")
    lines = [ln for ln in export(site, "slurm-nodes").splitlines() if not ln.startswith("#")]
    nodes = [_kv(ln) for ln in lines if ln.startswith("NodeName=")]
    for kv in nodes:
        for host in expand(kv["NodeName"]):
            assert site.supernode_of(host).feature == kv["Features"]
            assert kv["RealMemory"] == str(site.node(host).spec.memory_mb)
        assert kv["Gres"] == "gpu:h100:8"
    part = _kv(lines[-1])
    assert part["PartitionName"] == "h100" and len(expand(part["Nodes"])) == 64


def test_ports_follow_physical_order_even_when_unsorted():
    site, problems = parse_site(
        "name: t\nvendor: nvidia\nnode_defaults: {devices: 1}\n" + LINKS + "supernodes:\n"
        "  - {name: a, nodes: 'n[4-5],n[0-1]'}\n  - {name: b, nodes: 'm1'}\n",
        "t.yaml",
    )
    assert not problems
    text = export(site, "slurm-nodes", node_port_base=100)
    ports: dict[str, int] = {}
    for line in text.splitlines():
        if line.startswith("NodeName="):
            kv = _kv(line)
            hosts = expand(kv["NodeName"])
            p = kv["Port"].strip("[]").split("-")
            rng = list(range(int(p[0]), int(p[-1]) + 1))
            assert len(rng) == len(hosts)
            ports.update(zip(hosts, rng, strict=True))
    assert ports == {"n4": 100, "n5": 101, "n0": 102, "n1": 103, "m1": 104}


def test_gres_count_without_file_and_no_partition():
    site, _ = parse_site(
        "name: t\nvendor: nvidia\nnode_defaults: {devices: 4}\n"
        + LINKS
        + "supernodes: [{name: a, nodes: 'n[0-1]'}]\n",
        "t.yaml",
    )
    assert "NodeName=n[0-1] Name=gpu Count=4" in export(site, "gres")
    assert "PartitionName" not in export(site, "slurm-nodes")


def test_json_round_trips():
    site = bundled("ascend-superpod")
    data = json.loads(export(site, "json"))
    assert data["vendor"] == "ascend"
    assert data["supernodes"][1]["super_pod_id"] == 1
    assert len(data["supernodes"][0]["nodes"][0]["device_ips"]) == 16


@pytest.mark.parametrize("site_name", SITES)
def test_json_holds_every_setting_of_the_model(site_name):
    """ "The whole model": every field of Site (its super nodes as a list) is in the JSON, with
    the site's values, so a new setting cannot be left out unnoticed."""
    import dataclasses

    site = bundled(site_name)
    data = json.loads(export(site, "json"))
    public = {f.name for f in dataclasses.fields(site) if not f.name.startswith("_")}
    assert public <= set(data), public - set(data)
    assert data["imex_channels"] is site.imex_channels
    assert data["doctor"]["slow_pct"] == site.doctor.slow_pct
    assert data["containers"]["runtime"] == site.containers.runtime
    assert data["restarts"] == dict(site.restarts)
    for section in ("slurm", "bench", "paths", "doctor", "containers", "observe"):
        fields = {f.name for f in dataclasses.fields(getattr(site, section))}
        assert fields == set(data[section]), section


def test_export_errors():
    site = bundled("local")
    with pytest.raises(InputError, match="unknown export format"):
        export(site, "nope")
    with pytest.raises(InputError, match="only applies"):
        export(site, "gres", node_port_base=17000)
    with pytest.raises(InputError, match="no room"):
        export(site, "slurm-nodes", node_port_base=65530)


def test_write_atomic(tmp_path):
    target = tmp_path / "out.conf"
    target.write_text("old")
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.conf"]  # no temp file left


def test_show_plain_and_rich():
    import io

    from slurm_supernode.site.show import print_site, render_text

    site = bundled("nvl72")
    plain = render_text(site)
    assert "nvl72-02: 18 nodes, 72 devices, feature nvl72-02" in plain
    assert "nodes gb[019-036] (spec A)" in plain

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    print_site(site, out)
    assert "gb[019-036]" in out.getvalue()  # hostlist brackets are not eaten as markup
    assert "900" in out.getvalue()


def test_show_names_spares_and_the_plugin_settings():
    import dataclasses
    import io

    from slurm_supernode.site.show import print_site, render_text

    site = bundled("nvl72")
    site = dataclasses.replace(
        site,
        supernodes=(dataclasses.replace(site.supernodes[0], spares=2), *site.supernodes[1:]),
        slurm=dataclasses.replace(site.slurm, small_jobs="aligned",
                                  supernode_partitions=("gb200", "debug")),
    )  # fmt: skip
    first = site.supernodes[0].name
    plain = render_text(site)
    assert f"{first}: 18 nodes, 72 devices, feature {first}, 2 spares (jobs take 16)" in plain
    assert "whole super nodes enforced in gb200,debug, small jobs aligned" in plain

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    print_site(site, out)
    assert "2 spares (jobs take 16)" in out.getvalue()
    assert "small jobs aligned" in out.getvalue()


@pytest.mark.parametrize("site_name", SITES)
def test_block_sizes_or_levels_by_target_version(site_name):
    """23.11 reads BlockLevels (level L = base x 2^L), 24.05+ BlockSizes: same blocks."""
    site = bundled(site_name)
    new = export(site, "topology-block", target=SlurmTarget(24, 11))
    old = export(site, "topology-block", target=SlurmTarget(23, 11))
    sizes = [int(x) for x in new.split("BlockSizes=")[1].split(",")]
    assert "BlockLevels" not in new and "BlockSizes" not in old
    levels = old.split("BlockLevels=")[1].strip()
    top = int(levels.split("-")[-1])
    assert levels == ("0" if top == 0 else f"0-{top}")
    assert [sizes[0] << lvl for lvl in range(top + 1)] == sizes
    assert [ln for ln in old.splitlines() if ln.startswith("BlockName")] == [
        ln for ln in new.splitlines() if ln.startswith("BlockName")
    ]
    assert new == export(site, "topology-block")  # no target: the newest syntax


def test_block_refused_where_slurm_has_no_block_plugin():
    with pytest.raises(InputError, match=r"22\.05 has no topology/block") as info:
        export(bundled("local"), "topology-block", target=SlurmTarget(22, 5))
    assert "topology-tree" in info.value.hint


@pytest.mark.parametrize(
    ("target", "warned"),
    [
        (SlurmTarget(24, 11), True),
        (SlurmTarget(23, 11), True),
        (None, True),
        (SlurmTarget(25, 5), False),
        (SlurmTarget(26, 5), False),
    ],
)
def test_topology_yaml_warns_where_it_would_be_ignored(target, warned):
    warnings = export_warnings(bundled("nvl72"), "topology-yaml", target)
    assert any("ignores topology.yaml" in w for w in warnings) is warned


def test_lua_on_block_site_warns_without_segment():
    site = bundled("nvl72")
    assert site.slurm.strategy == "block"
    assert any(
        "--segment" in w for w in export_warnings(site, "job-submit-lua", SlurmTarget(23, 11))
    )
    assert export_warnings(site, "job-submit-lua", SlurmTarget(24, 11)) == []


@pytest.mark.parametrize("text", ["24", "24.x", "", "1.2.3.4", "24.11.5.1", "v24.11"])
def test_parse_target_rejects(text):
    with pytest.raises(InputError, match="not a Slurm version"):
        parse_target(text)


def test_parse_target_accepts():
    assert parse_target("24.11.5") == (24, 11) and parse_target("23.11") == SlurmTarget(23, 11)
