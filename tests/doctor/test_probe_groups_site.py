"""nvidia-smi parsing, the node-pair scopes of the bench, the site's doctor section, and the
storage probe on a real directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_supernode.bench.groups import RankIdentity, scope_groups
from slurm_supernode.doctor.probe import (
    normalise_bus_id,
    parse_fabric,
    parse_smi_query,
    storage_test,
)
from slurm_supernode.errors import ConfigError
from slurm_supernode.site.loader import load_site

ROOT = Path(__file__).resolve().parents[2]

SMI_Q = """
==============NVSMI LOG==============

Driver Version                            : 570.86.15
Attached GPUs                             : 2
GPU 00000009:01:00.0
    Product Name                          : NVIDIA GB200
    Fabric
        State                             : Completed
        Status                            : Success
        CliqueId                          : 32766
        ClusterUUID                       : 5d2b5c8f-aaaa-bbbb-cccc-000000000001
        Health
            Bandwidth                     : Full
    Processes                             : None
GPU 00000019:01:00.0
    Product Name                          : NVIDIA GB200
    Fabric
        State                             : In Progress
        ClusterUUID                       : N/A
"""

H200_Q = """
GPU 00000000:18:00.0
    Product Name                          : NVIDIA H200
    Fabric
        State                             : N/A
        Status                            : N/A
        CliqueId                          : N/A
        ClusterUUID                       : N/A
"""


def test_parse_fabric_reads_state_and_cluster_uuid_per_bus_id():
    assert parse_fabric(SMI_Q) == {
        "0009:01:00.0": ("Completed", "5d2b5c8f-aaaa-bbbb-cccc-000000000001"),
        "0019:01:00.0": ("In Progress", ""),
    }
    assert parse_fabric(H200_Q) == {"0000:18:00.0": ("N/A", "")}
    assert parse_fabric("") == {}


def test_parse_smi_query_and_bus_ids():
    text = (
        "0, 00000000:18:00.0, GPU-aa, NVIDIA H200, 580.95.05, 1980, 1980\n"
        "1, 00000000:2A:00.0, GPU-bb, NVIDIA H200, 580.95.05, [N/A], 1980\n"
        "garbage line\n"
    )
    a, b = parse_smi_query(text)
    assert (a.index, a.bus_id, a.uuid, a.driver, a.sm_clock) == (
        0,
        "0000:18:00.0",
        "GPU-aa",
        "580.95.05",
        1980,
    )
    assert b.bus_id == "0000:2a:00.0" and b.sm_clock is None and b.max_sm_clock == 1980
    assert normalise_bus_id("0000:2A:00.0") == normalise_bus_id("00000000:2a:00.0")


def _ids(nodes_per_sn: int, supernodes: int = 2, nproc: int = 2):
    out = []
    for s in range(supernodes):
        for n in range(nodes_per_sn):
            node = s * nodes_per_sn + n
            out += [
                RankIdentity(node * nproc + i, f"h{node}", f"node{node}", f"sn{s}")
                for i in range(nproc)
            ]
    return out


def test_pair_scopes_share_no_pair_and_stay_inside_a_supernode():
    ids = _ids(4)
    plain = scope_groups(ids, "pairs")
    shifted = scope_groups(ids, "pairs_shift")
    assert plain == ((0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11), (12, 13, 14, 15))
    assert shifted == ((0, 1, 6, 7), (2, 3, 4, 5), (8, 9, 14, 15), (10, 11, 12, 13))
    # every node appears once per pairing; no pair twice
    for groups in (plain, shifted):
        ranks = [r for g in groups for r in g]
        assert sorted(ranks) == list(range(16))
    assert not set(plain) & set(shifted)
    # two nodes per super node: the shifted pairing would repeat the pair, so it is empty
    assert scope_groups(_ids(2), "pairs_shift") == ()
    assert len(scope_groups(_ids(3), "pairs_shift")) == 2  # (1,2) in each super node


def _site_with(tmp_path, doctor: str) -> Path:
    text = (ROOT / "site-configs" / "local.yaml").read_text() + "doctor:\n" + doctor
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def test_site_doctor_section_loads_and_bad_values_are_located(tmp_path):
    site = load_site(
        str(
            _site_with(
                tmp_path,
                "  bandwidth_warn: 0.8\n  size: 1048576\n"
                "  checkpoint_dir: /ckpt\n  min_write_mbps: 500\n",
            )
        )
    )
    assert (
        site.doctor.bandwidth_warn,
        site.doctor.size,
        site.doctor.checkpoint_dir,
        site.doctor.min_write_mbps,
        site.doctor.bandwidth_fail,
    ) == (0.8, 1 << 20, "/ckpt", 500.0, 0.4)
    with pytest.raises(ConfigError) as err:
        load_site(
            str(_site_with(tmp_path, "  bandwidth_fail: 1.5\n  slow_pct: 0\n  min_tflop: 3\n"))
        )
    text = str(err.value)
    assert "s.yaml:" in text and "doctor.bandwidth_fail must be a fraction" in text
    assert "doctor.slow_pct must be in (0, 100)" in text and "min_tflops" in text


def test_storage_probe_measures_and_removes_its_file(tmp_path):
    s = storage_test(str(tmp_path), 4)
    assert not s.error and s.write_mbps > 0 and s.read_mbps > 0 and s.free_bytes > 0
    assert list(tmp_path.iterdir()) == []
    missing = storage_test(str(tmp_path / "nope"), 4)
    assert missing.free_bytes is None and "not accessible" in missing.error
