"""HCCL rank tables (v1.0, v1.2) field by field, validation, atomic writes; NCCL topo XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from slurm_supernode.errors import InputError, PlacementError
from slurm_supernode.placement.hccl import (
    V10_DEVICE,
    V12_DEVICE,
    build_rank_table,
    validate_rank_table,
    write_rank_table,
)
from slurm_supernode.placement.model import Layout
from slurm_supernode.placement.nccl_topo import build_topo_xml, write_topo_file
from slurm_supernode.placement.rankmap import build_rank_map
from tests.placement.sites import ascend_site, make_site, reversed_names

SITE = ascend_site(2, 2, namer=reversed_names(2, 2))  # 2 SuperPoDs x 2 servers x 16 NPUs
HOSTS = [n.hostname for n in SITE.nodes]


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


def test_v12_fields_and_super_pods(rm):
    table = build_rank_table(SITE, rm, "1.2")
    assert table["version"] == "1.2"
    pods = {
        p["super_pod_id"]: [s["server_id"] for s in p["server_list"]]
        for p in table["super_pod_list"]
    }
    for server in table["server_list"]:
        node = next(n for n in SITE.nodes if n.host_ip == server["server_id"])
        assert server["host_ip"] == node.host_ip
        sn = SITE.supernode(node.supernode)
        assert server["server_id"] in pods[str(sn.super_pod_id)]
        sdids = set()
        for dev in server["device"]:
            assert set(dev) == set(V12_DEVICE)
            d = int(dev["device_id"])
            assert dev["super_device_id"] == str(node.index * 16 + d)
            assert dev["backup_device_ip"] == node.device_ips[d ^ 1]
            sdids.add(dev["super_device_id"])
        assert len(sdids) == 16
    assert sorted(len(v) for v in pods.values()) == [2, 2]
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


def test_validation_catches_each_problem(rm):
    good = build_rank_table(SITE, rm, "1.2")

    def broken(mutate):
        t = json.loads(json.dumps(good))
        mutate(t)
        return " | ".join(validate_rank_table(t))

    assert "server_count" in broken(lambda t: t.__setitem__("server_count", "5"))
    assert "device_ip" in broken(
        lambda t: t["server_list"][1]["device"][0].__setitem__(
            "device_ip", t["server_list"][0]["device"][0]["device_ip"]
        )
    )
    assert "rank_id" in broken(
        lambda t: t["server_list"][0]["device"][0].__setitem__("rank_id", "99")
    )
    assert "host_port missing" in broken(
        lambda t: t["server_list"][0]["device"][3].pop("host_port")
    )
    assert "host_ip missing" in broken(lambda t: t["server_list"][2].__setitem__("host_ip", ""))
    assert "super_pod_list" in broken(lambda t: t["super_pod_list"].pop())
    assert "status" in broken(lambda t: t.__setitem__("status", "initializing"))
    assert validate_rank_table({"version": "2.0"})


def test_write_is_validated_and_atomic(rm, tmp_path):
    out = tmp_path / "sub" / "rank_table.json"
    write_rank_table(SITE, rm, out, "1.2")
    assert json.loads(out.read_text()) == build_rank_table(SITE, rm, "1.2")
    assert [p.name for p in out.parent.iterdir()] == ["rank_table.json"]  # no temp left over


def test_missing_device_ips_refused(tmp_path):
    site = make_site(1, 2, 8, vendor="ascend")
    rm = build_rank_map(site, "n[0-1]")
    with pytest.raises(PlacementError, match="device IPs"):
        write_rank_table(site, rm, tmp_path / "t.json")
    assert not (tmp_path / "t.json").exists()
    with pytest.raises(InputError, match="version"):
        build_rank_table(SITE, build_rank_map(SITE, HOSTS), "1.1")


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
