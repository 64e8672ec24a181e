"""Ascend rank tables on the real local cluster, from stand-in npu-smi/hccn_tool that print the
real tools' formats with per-node values (tests/data/ascend/): a 2-SuperPoD job's merged v1.2
table passes the validator written from HCCL's rules; a site/hardware mismatch and a missing
tool stop the job with one line before torchrun starts."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from slurm_supernode.placement.hccl_facts import decode_sdid
from slurm_supernode.placement.hccl_validate import sdid_problems, validate_rank_table
from tests.integration.helpers import EXAMPLES, ROOT, ledger, submit, wait_final

pytestmark = pytest.mark.slurm
BIN = ROOT / "tests" / "data" / "ascend" / "bin"
LOCAL = ROOT / "site-configs" / "local.yaml"


def ascend_site(tmp_path: Path, extra: str = "", pods: bool = False) -> Path:
    """local.yaml as an Ascend site (same nodes, 8 devices each; fake devices stay 'gpu')."""
    text = LOCAL.read_text().replace("vendor: nvidia", "vendor: ascend")
    text = text.replace("name: local", "name: local-ascend")
    if pods:
        for i, nodes in enumerate(("n[0-3]", "n[4-7]")):
            text = text.replace(
                f"    nodes: {nodes}\n", f"    nodes: {nodes}\n    super_pod_id: {i}\n"
            )
    site = tmp_path / "ascend.yaml"
    site.write_text(text + extra)
    return site


def run_job(tmp_path: Path, site: Path, path: str) -> tuple[Path, dict, str]:
    os.environ["PATH"] = f"{path}:{os.environ['PATH']}"  # sbatch exports it to the job
    try:
        _, job_dir = submit(
            "--site", str(site), "-S", "2", "--nproc-per-node", "1", "--max-restarts", "0",
            str(EXAMPLES / "check_ranks.py"), jobs=tmp_path / "jobs",
        )  # fmt: skip
    finally:
        os.environ["PATH"] = os.environ["PATH"].split(":", 1)[1]
    final = wait_final(job_dir, 240)
    log = "".join(p.read_text() for p in (job_dir / "logs").glob("*.out"))
    return job_dir, final, log


def test_two_superpod_job_gets_a_valid_v12_table_from_the_hardware(slurm_cluster, tmp_path):
    # site IPs agree with the stand-ins' hccn_tool (10.<pod+100>.<node>.<dev>), host IPs given
    # for sn0 only (host_ip is optional), no super_pod_id: the hardware's Super Pod IDs count
    extra = (
        '\ndevice_ips:\n  pattern: "10.{pod+100}.{node}.{dev}"\n'
        "host_ip:\n  nodes: {n0: 192.168.0.10, n1: 192.168.0.11, n2: 192.168.0.12,"
        " n3: 192.168.0.13}\n"
    )
    job_dir, final, log = run_job(tmp_path, ascend_site(tmp_path, extra), str(BIN))
    assert final["state"] == "COMPLETED", (final, log[-3000:])
    tables = sorted(job_dir.glob("rank_table.*.json"))
    assert len(tables) == 1, tables
    table = json.loads(tables[0].read_text())
    assert validate_rank_table(table) == [] and sdid_problems(table) == []
    assert table["version"] == "1.2" and table["server_count"] == "8"
    assert [p["super_pod_id"] for p in table["super_pod_list"]] == ["0", "1"]
    assert [[s["server_id"] for s in p["server_list"]] for p in table["super_pod_list"]] == [
        ["192.168.0.10", "192.168.0.11", "192.168.0.12", "192.168.0.13"],
        ["n4", "n5", "n6", "n7"],
    ]
    for k, server in enumerate(table["server_list"]):
        assert ("host_ip" in server) == (k < 4)
        (dev,) = server["device"]  # --nproc-per-node 1: device 0 of each node
        assert dev["rank_id"] == str(k) and dev["device_id"] == "0"
        # the stand-ins' values for node nK: pod K/4, server index K%4
        assert decode_sdid(int(dev["super_device_id"])) == (k % 4, 0, 0, 0)
        assert dev["device_ip"] == f"10.{100 + k // 4}.{k % 4}.0"
        assert dev["backup_device_ip"] == f"10.{100 + k // 4}.{k % 4}.1"  # die 1 of NPU 0
    # every node ran with that one table
    for k in range(8):
        env = json.loads((job_dir / "env" / f"n{k}.0.json").read_text())["env"]
        assert env["RANK_TABLE_FILE"] == str(tables[0])
        assert env["ASCEND_RT_VISIBLE_DEVICES"] == "0"
    result = json.loads((job_dir / "result.json").read_text())
    assert result["ok"] and result["world_size"] == 8


def expect_one_line_stop(job_dir: Path, final: dict, log: str, fragment: str) -> str:
    assert final["state"] != "COMPLETED", final
    errors = [line for line in log.splitlines() if re.match(r"snrun( agent)?: error: ", line)]
    assert errors and all(e == errors[0] for e in errors), log[-3000:]  # one line, everywhere
    assert fragment in errors[0], errors[0]
    assert "Traceback" not in log
    assert not (job_dir / "env").exists()  # torchrun was never started
    assert not (job_dir / "result.json").exists()
    assert not list(job_dir.glob("rank_table.*.json"))
    exits = [r for r in ledger(job_dir) if r["event"] == "node_exit"]
    assert exits and all(errors[0].endswith(": error: " + r["error"]) for r in exits)
    ends = [(r["cause"], r["action"]) for r in ledger(job_dir) if r["event"] == "attempt_end"]
    assert ends == [("config", "stop")], ends  # a configuration error: no second attempt
    return errors[0]


def test_site_hardware_mismatch_stops_before_torchrun(slurm_cluster, tmp_path):
    extra = (
        '\ndevice_ips:\n  pattern: "10.{pod+100}.{node}.{dev}"\n  nodes:\n'
        "    n5: [10.9.9.0, 10.9.9.1, 10.9.9.2, 10.9.9.3, 10.9.9.4, 10.9.9.5, 10.9.9.6,"
        " 10.9.9.7]\n"
    )
    job_dir, final, log = run_job(tmp_path, ascend_site(tmp_path, extra), str(BIN))
    line = expect_one_line_stop(job_dir, final, log, "site and hardware disagree: n5 device 0")
    assert "site 10.9.9.0, hardware 10.101.1.0 (hccn_tool)" in line


def test_missing_npu_smi_stops_before_torchrun(slurm_cluster, tmp_path):
    only_hccn = tmp_path / "bin"
    only_hccn.mkdir()
    (only_hccn / "hccn_tool").symlink_to(BIN / "hccn_tool")
    job_dir, final, log = run_job(tmp_path, ascend_site(tmp_path, pods=True), str(only_hccn))
    expect_one_line_stop(
        job_dir,
        final,
        log,
        "no SDIDs for the site's SuperPoDs (super_pod_id set): n0 (npu-smi not found)",
    )
