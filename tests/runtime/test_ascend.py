"""Reading an Ascend node's own values: parsers on the real tools' documented output (samples
in tests/data/ascend/, sources in SOURCES.md) and the reader, with stand-in tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_supernode.placement.hccl_facts import decode_sdid
from slurm_supernode.runtime.ascend import (
    parse_hccn_conf,
    parse_hccn_ip,
    parse_npu_mapping,
    parse_spod_info,
    read_node_facts,
    site_vs_hardware,
)

DATA = Path(__file__).parents[1] / "data" / "ascend"
BIN = DATA / "bin"


def sample(name: str) -> str:
    return (DATA / name).read_text()


def test_spod_info_a3_and_a2():
    sdid, pod, index = parse_spod_info(sample("npu-smi-spod-info-a3.txt"))
    assert (sdid, pod, index) == (37748736, "0", 9)
    assert decode_sdid(sdid) == (9, 0, 0, 0)  # server index agrees with npu-smi's
    assert parse_spod_info(sample("npu-smi-spod-info-a2.txt")) == (None, None, None)


def test_npu_mapping_with_and_without_phy_id_column():
    a3 = parse_npu_mapping(sample("npu-smi-info-m-a3.txt"))
    assert len(a3) == 16 and a3[0] == (0, 0) and a3[1] == (0, 1) and a3[15] == (7, 1)
    a2 = parse_npu_mapping(sample("npu-smi-info-m-a2.txt"))
    assert a2 == {n: (n, 0) for n in range(8)}  # MCU rows skipped
    assert parse_npu_mapping("npu-smi: command failed") == {}


def test_hccn_ip_and_conf():
    assert parse_hccn_ip(sample("hccn_tool-ip-g.txt")) == "29.1.112.213"
    assert parse_hccn_ip("ipaddr:10.0.0.11 / netmask:255.255.255.0") == "10.0.0.11"
    assert parse_hccn_ip("device 3 is not exist") is None
    conf = parse_hccn_conf(sample("hccn.conf"))
    assert len(conf) == 16 and conf[0] == "10.0.0.10" and conf[15] == "10.0.1.17"


def test_reader_with_stand_in_tools(monkeypatch):
    monkeypatch.setenv("SLURMD_NODENAME", "n6")  # hardware pod 1, server index 2
    facts = read_node_facts("n6", range(8), environ={"PATH": str(BIN)})
    assert facts.sdid_note is None and facts.ip_note is None
    for d in range(8):
        dev = facts.device(d)
        assert (dev.npu_id, dev.chip_id) == (d // 2, d % 2)
        assert dev.super_pod_id == "1" and dev.server_index == 2
        assert decode_sdid(dev.sdid) == (2, d // 2, d % 2, d)
        assert dev.device_ip == f"10.101.2.{d}" and dev.ip_source == "hccn_tool"


def test_reader_without_tools_says_why(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    facts = read_node_facts(
        "n0", range(4), environ={"PATH": str(empty)}, hccn_conf=tmp_path / "none.conf"
    )
    assert facts.sdid_note == "npu-smi not found"
    assert facts.ip_note == f"hccn_tool not found and no {tmp_path / 'none.conf'}"
    assert all(facts.device(d).sdid is None and facts.device(d).device_ip is None for d in range(4))
    # hccn.conf is the fallback for device IPs
    conf = tmp_path / "hccn.conf"
    conf.write_text(sample("hccn.conf"))
    facts = read_node_facts("n0", range(4), environ={"PATH": str(empty)}, hccn_conf=conf)
    assert facts.ip_note is None and facts.device(2).device_ip == "10.0.0.12"
    assert facts.device(2).ip_source == str(conf)


def test_reader_on_a2_hardware_marks_sdids_unsupported():
    def run(argv):
        if argv[1:3] == ["info", "-m"]:
            return 0, sample("npu-smi-info-m-a2.txt")
        if "spod-info" in argv:
            return 0, sample("npu-smi-spod-info-a2.txt")
        return 0, sample("hccn_tool-ip-g.txt")

    facts = read_node_facts("a", [0], environ={"PATH": str(BIN)}, run=run)
    assert facts.sdid_unsupported and "does not support querying spod-info" in facts.sdid_note
    assert facts.device(0).device_ip == "29.1.112.213"


@pytest.mark.parametrize("code", [1, 124])
def test_reader_failed_query_is_a_note_not_a_crash(code):
    def run(argv):
        return code, "dcmi error -8005"

    facts = read_node_facts("a", [0, 1], environ={"PATH": str(BIN)}, run=run)
    assert facts.sdid_note == "npu-smi info -m: dcmi error -8005"
    assert facts.ip_note == "hccn_tool -i 0: dcmi error -8005"


def test_site_vs_hardware_lines(monkeypatch):
    monkeypatch.setenv("SLURMD_NODENAME", "n1")
    facts = read_node_facts("n1", range(2), environ={"PATH": str(BIN)})
    assert site_vs_hardware(("10.100.1.0", "10.9.9.9"), facts) == [
        "n1 device 1 IP: site 10.9.9.9, hardware 10.100.1.1 (hccn_tool)"
    ]


def test_doctor_reads_device_ips_with_the_same_reader(monkeypatch):
    from slurm_supernode.doctor.probe import read_device_ips
    from tests.placement.sites import make_site

    site = make_site(1, 2, 4, vendor="ascend")  # hosts n0, n1
    monkeypatch.setenv("PATH", f"{BIN}:/usr/bin:/bin")  # the stand-ins use tr and printf
    monkeypatch.setenv("SLURMD_NODENAME", "n1")
    ips, _ = read_device_ips(site, "n1")
    assert ips == tuple(f"10.100.1.{d}" for d in range(4))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert read_device_ips(site, "n1")[0] is None  # unknown, not "no IPs"
