"""Unit tests of the Slurm layer without a cluster: parsers on outputs recorded from the real
minicluster (tests/data/slurm/), and error mapping with fake or missing binaries on PATH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_supernode.errors import SlurmError
from slurm_supernode.slurm import job_lookup, jobinfo, jobs, nodes
from slurm_supernode.slurm.parse import (
    parse_config,
    parse_exit_code,
    parse_kv_line,
    parse_kv_records,
    parse_sacct_rows,
)
from slurm_supernode.slurm.runner import run_slurm
from slurm_supernode.slurm.version import SlurmVersion, features_from, parse_version

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"
ROOT = Path(__file__).resolve().parents[2]


def recorded(name: str) -> str:
    return (DATA / name).read_text()


def one_job(name: str) -> jobinfo.JobInfo:
    (rec,) = parse_kv_records(recorded(name))
    return jobinfo.job_from_record(rec)


# ----- parser on recorded outputs ------------------------------------------------------------


def test_running_job_values_with_spaces_stay_whole():
    rec = parse_kv_line(recorded("show_job_running.txt"))
    assert rec["JobName"] == "run two"
    assert rec["Comment"] == "a comment with spaces"
    assert rec["StdErr"] == "/tmp/a.out"  # the pair after the comment is still its own
    assert rec["AllocNode:Sid"].startswith("localhost:")
    assert rec["CPUs/Task"] == "1"
    info = jobinfo.job_from_record(rec)
    assert (str(info.state), info.nodelist, info.num_nodes) == ("RUNNING", "n[0-1]", 2)
    assert info.restart_count == 0 and info.running and not info.ended
    assert info.stdout == "/tmp/a.out" and info.work_dir == "/tmp"
    assert info.start_time is not None and info.start_time.year >= 2024


def test_requeued_job_counts_restarts_and_waits_for_begin_time():
    info = one_job("show_job_requeued.txt")
    assert str(info.state) == "PENDING" and info.reason == "BeginTime"
    assert info.restart_count == 1
    assert info.nodelist is None  # "NodeList=" empty while pending


def test_pending_job_range_and_dependency():
    rec = parse_kv_line(recorded("show_job_pending.txt"))
    assert rec["Dependency"].startswith("afterany:")
    info = jobinfo.job_from_record(rec)
    assert info.num_nodes == 8  # "NumNodes=8-8"
    assert info.reason == "Dependency" and info.start_time is None


def test_failed_job_exit_code():
    info = one_job("show_job_failed.txt")
    assert str(info.state) == "FAILED" and info.ended
    assert (info.exit_code, info.exit_signal) == (3, 0)
    assert info.reason == "NonZeroExitCode"
    assert info.derived_exit_code is None  # 22.05's scontrol does not print it


def test_cancelled_job_is_ended():
    assert one_job("show_job_cancelled.txt").ended


def test_nodes_with_drain_reason_and_os_with_spaces():
    records = parse_kv_records(recorded("show_node.txt"))
    infos = {r["NodeName"]: nodes.node_from_record(r) for r in records}
    assert sorted(infos) == [f"n{i}" for i in range(8)]
    n7 = infos["n7"]
    assert n7.state == "idle" and n7.flags == ("drain",) and n7.drained and not n7.usable
    assert n7.reason == "maintenance: fan broken, see ticket 12"
    assert n7.features == ("sn1",) and n7.partitions == ("main", "debug")
    assert infos["n0"].state == "mixed" and infos["n0"].usable and infos["n0"].reason is None
    assert infos["n0"].gres == "gpu:8" and infos["n0"].cpus == 16
    os_value = records[0]["OS"]
    assert os_value.startswith("Linux ") and "RealMemory" not in os_value


def test_partitions():
    records = parse_kv_records(recorded("show_partition.txt"))
    parts = [nodes.partition_from_record(r) for r in records]
    assert [(p.name, p.default, p.max_nodes, p.total_nodes) for p in parts] == [
        ("main", True, None, 8),
        ("debug", False, None, 8),
    ]
    assert parts[0].nodes == "n[0-7]" and parts[0].state == "up"


def test_free_text_keeps_unknown_key_lookalikes():
    rec = parse_kv_line("NodeName=a State=IDLE Reason=see Note=x, call Bob=2 Comment=c d")
    assert rec["Reason"] == "see Note=x, call Bob=2"
    assert rec["Comment"] == "c d"
    # Outside free-text values an unknown capitalised key still starts a pair.
    assert parse_kv_line("JobId=1 NewKey24=x JobState=RUNNING")["NewKey24"] == "x"


def test_config_and_sacct_rows():
    conf = parse_config(recorded("show_config.txt"))
    assert conf["TopologyPlugin"] == "topology/tree"
    assert conf["SchedulerParameters"] == "bf_interval=1,sched_interval=2"
    fields = ["jobid", "jobname", "state", "x", "n"]
    (row,) = parse_sacct_rows(recorded("sacct_c_failed.txt"), fields)
    assert row["state"] == "FAILED" and parse_exit_code(row["x"]) == (3, 0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("slurm 22.05.8\n", (22, 5, 8)),
        ("slurm-wlm 24.11.1", (24, 11, 1)),
        ("slurm 23.02", (23, 2, 0)),
    ],
)
def test_parse_version(text, expected):
    assert parse_version(text) == expected


def test_parse_version_rejects_garbage():
    with pytest.raises(SlurmError):
        parse_version("no digits here")


def test_features_by_version():
    old = features_from(SlurmVersion(22, 5, 8), {"TopologyPlugin": "topology/tree"})
    assert (old.has_block, old.supports_block_plugin, old.supports_segment) == (False, False, False)
    new = features_from(SlurmVersion(24, 11, 1), {"TopologyPlugin": "topology/block"})
    assert (new.has_block, new.supports_block_plugin, new.supports_segment) == (True, True, True)
    mid = features_from(SlurmVersion(23, 11, 0), {"TopologyPlugin": "(null)"})
    assert mid.topology_plugin is None and mid.supports_block_plugin and not mid.supports_segment


# `scontrol show topology block` on 26.05 with topology.yaml (show config says topology/flat).
TOPOLOGY_2605 = """\
BlockName=sn0 BlockIndex=0 Nodes=n[0-3] BlockSize=4
BlockName=sn1 BlockIndex=1 Nodes=n[4-7] BlockSize=4
AggregatedBlock=sn[0-1] BlockIndex=2 Nodes=n[0-7] BlockSize=8
"""
TOPOLOGY_TREE = "SwitchName=sn0 Level=0 LinkSpeed=1 Nodes=n[0-3]\nSwitchName=spine Level=1\n"


def test_blocks_found_behind_flat_plugin():
    """26.05 + topology.yaml: the config names topology/flat, the topology lists blocks."""
    flat = {"TopologyPlugin": "topology/flat"}
    yaml_site = features_from(SlurmVersion(26, 5, 5), flat, topology_text=TOPOLOGY_2605)
    assert yaml_site.has_block and yaml_site.topology_plugin == "topology/flat"
    tree = features_from(SlurmVersion(26, 5, 5), flat, topology_text=TOPOLOGY_TREE)
    assert not tree.has_block
    assert not features_from(SlurmVersion(26, 5, 5), flat, topology_text="").has_block


@pytest.mark.parametrize(
    ("client", "scron", "ok", "why"),
    [
        (False, "enable", False, "no scrontab client"),
        (True, "(null)", False, "ScronParameters=enable"),
        (True, None, False, "ScronParameters=enable"),
        (True, "enable", True, None),
        (True, "explicit_scancel,enable", True, None),
    ],
)
def test_scrontab_needs_client_and_enable(client, scron, ok, why):
    config = {"TopologyPlugin": "topology/tree"}
    if scron is not None:
        config["ScronParameters"] = scron
    feats = features_from(SlurmVersion(24, 11, 5), config, scrontab_client=client)
    assert feats.has_scrontab is ok
    assert (feats.scrontab_why_not is None) if why is None else (why in feats.scrontab_why_not)


@pytest.mark.parametrize(("text", "expected"), [("123\n", 123), ("77;cluster\n", 77)])
def test_parse_job_id(text, expected):
    assert jobs.parse_job_id(text) == expected


def test_parse_job_id_rejects_noise():
    with pytest.raises(SlurmError, match="no job id"):
        jobs.parse_job_id("sbatch: error: nope")


# ----- error mapping with fake binaries ------------------------------------------------------


def test_missing_binary_says_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SlurmError) as err:
        run_slurm(["sbatch", "--parsable"])
    assert "not installed" in str(err.value) and "apt-get install" in (err.value.hint or "")


def test_nonzero_exit_names_command_and_stderr(fake_bin):
    fake_bin("sbatch", "echo 'sbatch: error: Batch job submission failed: Bad account' >&2; exit 1")
    with pytest.raises(SlurmError) as err:
        jobs.submit("#!/bin/bash\ntrue\n")
    msg = str(err.value)
    assert msg.startswith("sbatch failed (exit 1)") and "Bad account" in msg
    assert "\n" not in msg


def test_controller_down_has_hint(fake_bin):
    fake_bin(
        "scontrol",
        "echo 'slurm_load_node error: Unable to contact slurm controller (connect failure)' >&2;"
        " exit 1",
    )
    with pytest.raises(SlurmError) as err:
        nodes.node_infos()
    assert "cannot reach the Slurm controller" in str(err.value)
    assert "scontrol ping" in (err.value.hint or "")


def test_check_false_returns_the_failure(fake_bin):
    fake_bin("scontrol", "echo out; echo err >&2; exit 4")
    proc = run_slurm(["scontrol", "x"], check=False)
    assert (proc.returncode, proc.stdout, proc.stderr) == (4, "out\n", "err\n")


def test_timeout_becomes_slurm_error(fake_bin):
    fake_bin("sinfo", "exec sleep 5")
    with pytest.raises(SlurmError, match=r"did not answer within 0\.3 s"):
        run_slurm(["sinfo"], timeout=0.3)


def test_missing_slurm_conf_fails_at_once(fake_bin, tmp_path, monkeypatch):
    fake_bin("sinfo", "echo should-not-run")
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "nope.conf"))
    with pytest.raises(SlurmError, match="SLURM_CONF points to a missing file"):
        run_slurm(["sinfo"])


def test_submit_passes_script_on_stdin_and_env(fake_bin, tmp_path):
    fake_bin("sbatch", 'cat > "$PWD/got.sh"; echo "$* $SNRUN_X" > "$PWD/args"; echo "42;c1"')
    job = jobs.submit("#!/bin/bash\necho hi\n", ["-N2"], cwd=tmp_path, env={"SNRUN_X": "y"})
    assert job == 42
    assert (tmp_path / "got.sh").read_text() == "#!/bin/bash\necho hi\n"
    assert (tmp_path / "args").read_text().strip() == "--parsable -N2 y"


def test_job_info_falls_back_to_completion_log(fake_bin):
    fake_bin("scontrol", "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1")
    # Two runs of a requeued job in the completion log: the last one wins.
    fake_bin(
        "sacct",
        '[ "$1" = -c ] || { echo "accounting storage is disabled" >&2; exit 1; }\n'
        "echo '9|train|NODE_FAIL|0:0|0:0|n[0-1]|2|main|2026-01-01T00:00:00|"
        "2026-01-01T00:01:00|/w'\n"
        "echo '9|train|CANCELLED by 0|0:15|0:0|n[2-3]|2|main|2026-01-01T00:02:00|"
        "2026-01-01T00:03:00|/w'",
    )
    info = job_lookup.job_info(9)
    assert info is not None and info.source == "sacct-c"
    assert (str(info.state), info.exit_signal, info.nodelist) == ("CANCELLED", 15, "n[2-3]")
    assert info.restart_count is None and info.ended


def test_job_info_unknown_everywhere_is_none(fake_bin):
    fake_bin("scontrol", "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1")
    fake_bin("sacct", "echo 'sacct: error: accounting storage is disabled' >&2; exit 1")
    assert job_lookup.job_info(12345) is None


def test_gen_shape_exports_through_the_site_exporter(tmp_path):
    """The minicluster's shape step: sizes -> a site YAML -> snrun site export."""
    script = ROOT / "contrib" / "minicluster" / "gen-shape"
    subprocess.run(
        ["bash", str(script), str(tmp_path), "/dev/x", "3", "2", "4", "8", "20000"], check=True
    )
    from ClusterShell.NodeSet import NodeSet

    node_lines = [
        ln for ln in (tmp_path / "nodes.conf").read_text().splitlines() if ln.startswith("NodeName")
    ]
    assert len(node_lines) == 3
    kv = [dict(t.split("=", 1) for t in ln.split()) for ln in node_lines]
    assert [k["Features"] for k in kv] == ["sn0", "sn1", "sn2"]
    assert sum(len(NodeSet(k["NodeName"])) for k in kv) == 6
    assert kv[2]["Port"] == "[20004-20005]" and kv[0]["Gres"] == "gpu:4"
    topo = (tmp_path / "topology.conf").read_text()
    assert "SwitchName=sn1 Nodes=n[2-3]" in topo and "SwitchName=spine Switches=sn[0-2]" in topo
    assert "File=/dev/x/nvidia[0-3]" in (tmp_path / "gres.conf").read_text()
    parts = (tmp_path / "nodes.conf").read_text()
    assert "PartitionName=main Nodes=n[0-5] Default=YES" in parts
    assert "PartitionName=debug Nodes=ALL Default=NO" in parts
    assert os.access(script, os.X_OK)
    from slurm_supernode.site.loader import load_site

    site = load_site(str(tmp_path / "site.yaml"))  # the generated site validates
    assert [sn.name for sn in site.supernodes] == ["sn0", "sn1", "sn2"]
    assert (tmp_path / "shape-summary").read_text() == "3 super nodes x 2, 4 GPUs each\n"


def test_gen_shape_summarises_the_given_site_not_the_default_sizes(tmp_path):
    """`minicluster up --site F` prints F's shape (gen-shape's shape-summary), not 2 x 4 x 8."""
    site = tmp_path / "mine.yaml"
    site.write_text(
        (ROOT / "site-configs" / "local.yaml").read_text()
        .replace("nodes: n[0-3]", "nodes: n[0-2]\n    spares: 1")
        .replace("nodes: n[4-7]", "nodes: n[3-5]\n    spares: 1")
    )  # fmt: skip
    out = tmp_path / "etc"
    out.mkdir()
    script = ROOT / "contrib" / "minicluster" / "gen-shape"
    subprocess.run(["bash", str(script), str(out), "/dev/x", "2", "4", "8", "8", "20000",
                    str(site)], check=True)  # fmt: skip
    assert (out / "shape-summary").read_text() == "2 super nodes x 3 (2 spares), 8 GPUs each\n"
    minicluster = (ROOT / "contrib" / "minicluster" / "minicluster").read_text()
    assert 'cat "$ETC/shape-summary"' in minicluster


def test_gen_shape_writes_a_site_like_the_bundled_local_one(tmp_path):
    """A cluster whose site gen-shape writes (other sizes, another device dir: a namespaced
    cluster, a second cluster) is described like site-configs/local.yaml in everything but its
    sizes and devices: nics (socket_ifname lo), links, slurm, env profiles, bench, paths."""
    import dataclasses
    import json

    from slurm_supernode.site.loader import load_site

    script = ROOT / "contrib" / "minicluster" / "gen-shape"
    subprocess.run(
        ["bash", str(script), str(tmp_path), "/dev/x", "2", "4", "8", "8", "20000"], check=True
    )
    written = load_site(str(tmp_path / "site.yaml"))
    bundled = load_site(str(ROOT / "site-configs" / "local.yaml"))
    assert written.node("n5").spec.nics == bundled.node("n5").spec.nics
    assert bundled.node("n5").spec.nics.socket_ifname == "lo"

    def described(site, dev: str) -> str:
        text = json.dumps(dataclasses.asdict(site) | {"source": None}, sort_keys=True, default=str)
        return text.replace(dev, "DEV")

    assert described(written, "/dev/x") == described(bundled, "/tmp/snrun-minicluster/dev")


def test_gen_shape_writes_the_spares_into_the_site(tmp_path):
    """`minicluster --spares 2` (SNRUN_MC_SPARES): an NVL72 rack of 18 trays, 16 used."""
    script = ROOT / "contrib" / "minicluster" / "gen-shape"
    subprocess.run(
        ["bash", str(script), str(tmp_path), "/dev/x", "2", "18", "4", "8", "20000"],
        check=True,
        env={**os.environ, "SNRUN_MC_SPARES": "2"},
    )
    from slurm_supernode.site.loader import load_site

    site = load_site(str(tmp_path / "site.yaml"))
    assert [(len(sn.nodes), sn.spares, sn.job_size) for sn in site.supernodes] == [(18, 2, 16)] * 2
    lua = subprocess.run(
        [sys.executable, "-m", "slurm_supernode", "site", "export", str(tmp_path / "site.yaml"),
         "--format", "job-submit-lua"],
        check=True, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout  # fmt: skip
    assert '{ size = 16, count = 2, constraint = "sn0|sn1" }' in lua


def test_gen_shape_gives_every_export_the_version_and_never_asks_sinfo(fake_bin, tmp_path):
    """Inside a namespaced cluster `sinfo --version` reads the slurm.conf being written (its
    nodes.conf does not exist yet) and hangs until killed: gen-shape must not need it."""
    log = tmp_path / "calls"
    fake_bin("slurmctld", 'echo "slurm 24.11.5"')
    fake_bin("sinfo", f'echo "sinfo $*" >>{log}; sleep 30')
    fake_bin("scontrol", f'echo "scontrol $*" >>{log}; exit 1')
    out = tmp_path / "etc"
    out.mkdir()
    script = str(ROOT / "contrib" / "minicluster" / "gen-shape")
    subprocess.run(
        ["bash", script, str(out), "/dev/x", "2", "4", "8", "8", "17000"],
        check=True,
        env={**os.environ, "PYTHON": sys.executable, "SNRUN_MC_TOPOLOGY": "block"},
        timeout=60,
    )
    assert not log.exists()
    assert "BlockName=sn0" in (out / "topology.conf").read_text()
    assert "BlockSizes" in (out / "topology.conf").read_text()  # 24.05+ spelling
