"""HCCL rank tables (v1.0, v1.2) field by field, hardware facts and site cross-checks, the
validator written from HCCL's parser rules, atomic writes; NCCL topo XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from slurm_supernode.errors import InputError, PlacementError
from slurm_supernode.placement.hccl import build_rank_table, plan_rank_table, write_rank_table
from slurm_supernode.placement.hccl_facts import DeviceFacts, NodeFacts, decode_sdid
from slurm_supernode.placement.hccl_format import (
    BACKUP_DEVICE_PORT,
    DEVICE_PORT,
    HOST_PORT_BASE,
    V10_DEVICE,
    V12_DEVICE,
)
from slurm_supernode.placement.hccl_validate import sdid_problems, validate_rank_table
from slurm_supernode.placement.model import Layout
from slurm_supernode.placement.nccl_topo import build_topo_xml, write_topo_file
from slurm_supernode.placement.rankmap import build_rank_map
from tests.placement.sites import ascend_site, make_site, reversed_names

SITE = ascend_site(2, 2, namer=reversed_names(2, 2))  # 2 SuperPoDs x 2 servers x 16 NPUs
HOSTS = [n.hostname for n in SITE.nodes]
DOC_EXAMPLE = Path(__file__).parents[1] / "data" / "ascend" / "hccl-doc-v12-example.json"


def sdid(server_index: int, device: int) -> int:
    """An SDID as A3 hardware reports it (DCMI layout: server index, chip, die, device)."""
    return server_index << 22 | (device // 2) << 18 | (device % 2) << 16 | device


def hw_facts(site, ip=None, pod=None, **kw) -> dict[str, NodeFacts]:
    """What every node of ``site`` would read: A3 SDIDs, hardware pod = super node ordinal
    (or ``pod(node)``), device IPs = the site's (or ``ip(node, d)``)."""
    out = {}
    for sn_i, sn in enumerate(site.supernodes):
        for node in sn.nodes:
            devs = tuple(
                DeviceFacts(
                    d,
                    npu_id=d // 2,
                    chip_id=d % 2,
                    device_ip=ip(node, d) if ip else (node.device_ips or [None] * 99)[d],
                    ip_source="hccn_tool",
                    sdid=sdid(node.index, d),
                    super_pod_id=str(pod(node) if pod else sn_i),
                    server_index=node.index,
                )
                for d in range(node.devices)
            )
            out[node.hostname] = NodeFacts(node.hostname, devs, **kw)
    return out


def strip(facts, keep=("device_id", "device_ip"), **kw) -> dict[str, NodeFacts]:
    """``facts`` with only the ``keep`` fields of each device (a tool gave nothing else)."""
    return {
        h: NodeFacts(
            h, tuple(DeviceFacts(**{k: getattr(d, k) for k in keep}) for d in f.devices), **kw
        )
        for h, f in facts.items()
    }


def without_pods(site):
    return replace(site, supernodes=tuple(replace(sn, super_pod_id=None) for sn in site.supernodes))


FACTS = hw_facts(SITE)


@pytest.fixture(scope="module")
def rm():
    return build_rank_map(SITE, HOSTS, Layout(tp=8, pp=2))


def test_v10_fields(rm):
    table = build_rank_table(SITE, rm, "1.0")
    assert table["status"] == "completed" and table["version"] == "1.0"
    assert table["server_count"] == "4"
    assert "super_pod_list" not in table
    for server, placement in zip(table["server_list"], rm.nodes, strict=True):
        node = SITE.node(placement.hostname)
        assert server["server_id"] == node.host_ip
        assert server["host_nic_ip"] == "reserve"
        assert len(server["device"]) == 16
        for dev in server["device"]:
            assert set(dev) == set(V10_DEVICE)
            assert all(isinstance(v, str) for v in dev.values())
            rank = rm.ranks[int(dev["rank_id"])]
            assert rank.hostname == node.hostname  # rank_id is the torch RANK of that device
            assert int(dev["device_id"]) == rank.device
            assert dev["device_ip"] == node.device_ips[rank.device]
    assert validate_rank_table(table) == []


def test_rank_ids_follow_physical_rank_order(rm):
    table = build_rank_table(SITE, rm, "1.0")
    ids = [int(d["rank_id"]) for s in table["server_list"] for d in s["device"]]
    assert ids == list(range(rm.world_size))  # servers in node-rank order, devices by local rank
    # Ascend's own numbering: rank_id = pod index x devices per pod + i (whole pods, all NPUs)
    for server in table["server_list"]:
        node = next(n for n in SITE.nodes if n.host_ip == server["server_id"])
        pod = SITE.supernode(node.supernode).super_pod_id
        for dev in server["device"]:
            i = node.index * 16 + int(dev["device_id"])
            assert int(dev["rank_id"]) == pod * 32 + i


def test_v12_from_hardware_facts(rm):
    table = build_rank_table(SITE, rm, "1.2", FACTS)
    assert table["version"] == "1.2"
    pods = {
        p["super_pod_id"]: [s["server_id"] for s in p["server_list"]]
        for p in table["super_pod_list"]
    }
    for server in table["server_list"]:
        node = next(n for n in SITE.nodes if n.host_ip == server["server_id"])
        assert server["host_ip"] == node.host_ip
        assert server["server_id"] in pods[str(SITE.supernode(node.supernode).super_pod_id)]
        for dev in server["device"]:
            assert set(dev) == set(V12_DEVICE)
            d = int(dev["device_id"])
            assert dev["super_device_id"] == str(sdid(node.index, d))  # npu-smi's, not made up
            assert decode_sdid(int(dev["super_device_id"])) == (node.index, d // 2, d % 2, d)
            assert dev["backup_device_ip"] == node.device_ips[d ^ 1]  # other die, same NPU
            assert dev["host_port"] == str(HOST_PORT_BASE + d)
            assert dev["device_port"] == str(DEVICE_PORT)
            assert dev["backup_device_port"] == str(BACKUP_DEVICE_PORT)
    assert sorted(len(v) for v in pods.values()) == [2, 2]
    assert validate_rank_table(table) == [] and sdid_problems(table) == []


def test_v12_is_never_invented(rm, tmp_path):
    with pytest.raises(PlacementError, match="needs the SDID npu-smi reports"):
        build_rank_table(SITE, rm, "1.2")
    with pytest.raises(PlacementError, match="needs the SDID"):
        write_rank_table(SITE, rm, tmp_path / "t.json", "1.2")
    assert not (tmp_path / "t.json").exists()
    assert plan_rank_table(SITE, rm, FACTS).version == "1.2"  # SDIDs everywhere: v1.2


def test_no_sdids_gives_v10_with_a_note_or_an_error():
    site = without_pods(make_site(2, 2, 8, vendor="ascend", with_ips=True))
    rm = build_rank_map(site, [n.hostname for n in site.nodes])
    a2 = strip(
        hw_facts(site),
        sdid_note="device 0 does not support querying spod-info",
        sdid_unsupported=True,
    )
    plan = plan_rank_table(site, rm, a2)
    assert plan.version == "1.0" and validate_rank_table(plan.table) == []
    assert len(plan.notes) == 1 and "v1.0" in plan.notes[0] and "spod-info" in plan.notes[0]
    # npu-smi missing on a site that declares SuperPoDs: refuse rather than guess
    missing = strip(FACTS, sdid_note="npu-smi not found")
    rm2 = build_rank_map(SITE, HOSTS)
    with pytest.raises(PlacementError, match="no SDIDs for the site's SuperPoDs") as exc:
        plan_rank_table(SITE, rm2, missing)
    assert "npu-smi not found" in str(exc.value) and "\n" not in str(exc.value)
    # some nodes with SDIDs, some without
    mixed = dict(FACTS) | {HOSTS[0]: missing[HOSTS[0]]}
    with pytest.raises(PlacementError, match="SDIDs read on some nodes but not on"):
        plan_rank_table(SITE, rm2, mixed)


def test_site_and_hardware_ip_mismatch_is_one_line(rm):
    def ip(node, d):
        return f"10.99.{node.index}.{d}" if node.hostname == HOSTS[1] else node.device_ips[d]

    with pytest.raises(PlacementError) as exc:
        plan_rank_table(SITE, rm, hw_facts(SITE, ip=ip))
    msg = str(exc.value)
    assert "site and hardware disagree" in msg and "\n" not in msg
    node = SITE.node(HOSTS[1])
    assert f"{HOSTS[1]} device 0 IP: site {node.device_ips[0]}, hardware 10.99." in msg
    assert "(+12 more)" in msg  # 16 devices, 4 shown


def test_hardware_ips_used_when_the_site_has_none():
    site = make_site(2, 2, 8, vendor="ascend")  # no device_ips, no host_ip
    rm = build_rank_map(site, [n.hostname for n in site.nodes])
    facts = hw_facts(site, ip=lambda n, d: f"10.{n.index}.{n.supernode[-1]}.{d}")
    plan = plan_rank_table(site, rm, facts)
    assert plan.version == "1.2"
    for server in plan.table["server_list"]:
        assert "host_ip" not in server  # optional in HCCL: left out, never ""
        assert server["device"][0]["device_ip"].startswith("10.")
    assert validate_rank_table(plan.table) == []
    # no IPs anywhere: a v1.2 table over two SuperPoDs needs them
    bare = strip(
        facts,
        keep=("device_id", "sdid", "super_pod_id", "server_index"),
        ip_note="hccn_tool not found, no /etc/hccn.conf",
    )
    with pytest.raises(PlacementError, match="no device IP.*hccn_tool not found"):
        plan_rank_table(site, rm, bare)
    # one SuperPoD (A3 links by SDID there): optional, left out on every device
    one = build_rank_map(site, [n.hostname for n in site.supernodes[0].nodes])
    table = plan_rank_table(site, one, bare).table
    assert all("device_ip" not in d for s in table["server_list"] for d in s["device"])
    assert validate_rank_table(table) == []


def test_pod_collisions_between_site_and_hardware():
    site = ascend_site(2, 2)
    # sn01 explicitly claims pod 0 while sn00 has no id and is hardware pod 0: one table entry
    # would merge two physical SuperPoDs (HCCL never lets ranks of two physical pods share one)
    sns = (replace(site.supernodes[0], super_pod_id=None), site.supernodes[1])
    bad = replace(site, supernodes=(sns[0], replace(sns[1], super_pod_id=0)))
    rm = build_rank_map(bad, [n.hostname for n in bad.nodes])
    with pytest.raises(PlacementError, match="super_pod_id 0 would merge hardware SuperPoDs"):
        plan_rank_table(bad, rm, hw_facts(bad))
    # one site super node whose nodes sit in two hardware pods
    rm2 = build_rank_map(site, [n.hostname for n in site.nodes])
    with pytest.raises(PlacementError, match="spans hardware SuperPoDs"):
        plan_rank_table(site, rm2, hw_facts(site, pod=lambda n: n.index))
    # a site id as a logical name for one whole hardware pod: allowed, and the job says so
    relabel = hw_facts(site, pod=lambda n: 7 if n.supernode == "sn00" else 8)
    plan = plan_rank_table(site, rm2, relabel)
    assert [p["super_pod_id"] for p in plan.table["super_pod_list"]] == ["0", "1"]
    assert any("logical SuperPoD id" in n and "Super Pod ID 7" in n for n in plan.notes)
    # no site ids: the hardware's
    plan = plan_rank_table(without_pods(site), rm2, relabel)
    assert [p["super_pod_id"] for p in plan.table["super_pod_list"]] == ["7", "8"]


def test_odd_device_count_has_no_self_backup():
    site = make_site(2, 2, 3, vendor="ascend", with_ips=True)
    rm = build_rank_map(site, [n.hostname for n in site.nodes])
    table = build_rank_table(site, rm, "1.2", hw_facts(site))
    for server in table["server_list"]:
        devs = {d["device_id"]: d for d in server["device"]}
        assert devs["0"]["backup_device_ip"] == devs["1"]["device_ip"]
        assert "backup_device_ip" not in devs["2"]  # a die without a partner: no backup at all
        for d in devs.values():
            assert d.get("backup_device_ip") != d["device_ip"]
    assert validate_rank_table(table) == []


def test_host_port_keyed_on_device_for_jobs_sharing_a_host():
    ports = []
    for groups in (((0, 1, 2, 3), (4, 5, 6, 7)), ((4, 5, 6, 7), (0, 1, 2, 3))):
        site = make_site(1, 1, 8, vendor="ascend", with_ips=True, device_groups=groups)
        rm = build_rank_map(site, ["n0"], nproc_per_node=4)
        table = build_rank_table(site, rm, "1.2", hw_facts(site))
        assert validate_rank_table(table) == []
        ports.append({d["host_port"] for d in table["server_list"][0]["device"]})
    assert len(ports[0]) == 4 and not ports[0] & ports[1]  # disjoint devices, disjoint ports


def test_sdid_server_index_must_match_npu_smi():
    facts = dict(FACTS)
    host = HOSTS[0]
    facts[host] = replace(
        facts[host], devices=tuple(replace(d, server_index=40) for d in facts[host].devices)
    )
    with pytest.raises(
        PlacementError, match="npu-smi values do not fit together.*decode to server index"
    ):
        plan_rank_table(SITE, build_rank_map(SITE, HOSTS), facts)


def test_hccl_documented_example_passes():
    assert validate_rank_table(json.loads(DOC_EXAMPLE.read_text())) == []


def test_validation_catches_each_parser_rule():
    good = json.loads(DOC_EXAMPLE.read_text())

    def broken(mutate):
        t = json.loads(json.dumps(good))
        mutate(t)
        return " | ".join(validate_rank_table(t))

    def s(t, i):
        return t["server_list"][i]

    def d(t, i, j):
        return t["server_list"][i]["device"][j]

    def renumber(t):
        for i, srv in enumerate(t["server_list"]):
            for j, dev in enumerate(srv["device"]):
                dev["rank_id"] = str(i * 4 + j)

    cases = {
        "server_count": lambda t: t.update(server_count="5"),
        "device_ip 192.168.1.6 also used": lambda t: d(t, 1, 0).update(device_ip="192.168.1.6"),
        "rank_id values are not exactly": lambda t: d(t, 0, 0).update(rank_id="99"),
        "interleave": lambda t: (d(t, 0, 3).update(rank_id="4"), d(t, 1, 0).update(rank_id="3")),
        "super_device_id missing": lambda t: d(t, 0, 3).pop("super_device_id"),
        "super_device_id 1 already exists in super pod 0": lambda t: d(t, 1, 0).update(
            super_device_id="1"
        ),
        "host_ip 'x' is not an IP": lambda t: s(t, 2).update(host_ip="x"),
        "host_port 16666 also used": lambda t: d(t, 0, 0).update(host_port="16666"),
        "backup_device_ip is the device's own IP": lambda t: d(t, 0, 0).update(
            backup_device_ip="192.168.1.6"
        ),
        "belongs to server node_1": lambda t: d(t, 0, 0).update(backup_device_ip="192.168.2.6"),
        "backup_device_port 16666 equals the device_port": lambda t: d(t, 0, 0).update(
            backup_device_port="16666"
        ),
        "device_port 0 is outside": lambda t: d(t, 0, 0).update(device_port="0"),
        "system port": lambda t: d(t, 0, 1).update(host_port="80"),
        "longer than 64": lambda t: (
            s(t, 0).update(server_id="x" * 65),
            t["super_pod_list"][0]["server_list"][0].update(server_id="x" * 65),
        ),
        "super_pod_id 0 listed twice": lambda t: t["super_pod_list"][1].update(super_pod_id="0"),
        "servers not in any super pod: node_3": lambda t: t["super_pod_list"][1][
            "server_list"
        ].pop(),
        "'ghost' is not in server_list": lambda t: t["super_pod_list"][0]["server_list"].append(
            {"server_id": "ghost"}
        ),
        "not listed together": lambda t: (
            t["server_list"].insert(1, t["server_list"].pop(2)),
            renumber(t),
        ),
        "set on some devices but not on others": lambda t: d(t, 0, 0).pop("device_ip"),
        "device_id 0 twice": lambda t: d(t, 0, 1).update(device_id="0"),
        "status": lambda t: t.update(status="initializing"),
        "server_id values are not unique": lambda t: s(t, 1).update(server_id="node_0"),
        "super_pod_list missing": lambda t: t.pop("super_pod_list"),
    }
    for expected, mutate in cases.items():
        assert expected in broken(mutate), expected
    assert validate_rank_table({"version": "2.0"})
    v10 = {
        "status": "completed",
        "version": "1.0",
        "server_list": [
            {"server_id": "a", "device": [{"device_id": "0", "rank_id": "0"}]},
            {"server_id": "b", "device": [{"device_id": "0", "rank_id": "1"}]},
        ],
    }
    msg = " | ".join(validate_rank_table(v10))
    assert "server_count missing" in msg and "required with more than one server" in msg


def test_sdid_problems_catch_made_up_ids():
    table = json.loads(DOC_EXAMPLE.read_text())  # HCCL's own example numbers SDIDs 0..7
    assert any("share SDID server index 0" in p for p in sdid_problems(table))


def test_write_is_validated_and_atomic(rm, tmp_path):
    out = tmp_path / "sub" / "rank_table.json"
    write_rank_table(SITE, rm, out, "1.2", FACTS)
    assert json.loads(out.read_text()) == build_rank_table(SITE, rm, "1.2", FACTS)
    assert [p.name for p in out.parent.iterdir()] == ["rank_table.json"]  # no temp left over


def test_missing_device_ips_refused(tmp_path):
    site = make_site(1, 2, 8, vendor="ascend")
    rm = build_rank_map(site, "n[0-1]")
    with pytest.raises(PlacementError, match="no device IP"):
        write_rank_table(site, rm, tmp_path / "t.json")
    assert not (tmp_path / "t.json").exists()
    with pytest.raises(InputError, match="version"):
        build_rank_table(SITE, build_rank_map(SITE, HOSTS), "1.1")


def test_facts_round_trip_through_json():
    f = FACTS[HOSTS[0]]
    again = NodeFacts.from_dict(json.loads(json.dumps(f.as_dict())))
    assert again == f and again.device(3).sdid == f.device(3).sdid


def test_nccl_topo_xml_islands(tmp_path):
    site = make_site(1, 2, 8, groups=2)
    rm = build_rank_map(site, "n[0-1]", Layout(tp=4))
    path = write_topo_file(site, rm, tmp_path / "topo.xml")
    root = ET.parse(path).getroot()
    assert root.tag == "system" and root.get("version") == "1"
    gpus = root.findall("./cpu/pci/gpu")
    assert len(gpus) == 8
    bus = {int(p.find("gpu").get("dev")): p.get("busid") for p in root.findall("./cpu/pci")}
    islands = site.nodes[0].spec.device_groups
    for gpu in gpus:
        dev = int(gpu.get("dev"))
        island = next(g for g in islands if dev in g)
        targets = {link.get("target") for link in gpu.findall("nvlink")}
        assert targets == {bus[p] for p in island if p != dev}
        assert int(gpu.get("rank")) == rm.nodes[0].visible_devices.index(dev)
    text = build_topo_xml(site.nodes[0].spec, rm.nodes[0].visible_devices, sm=100)
    assert 'sm="100"' in text
