"""The IMEX preflight: parsers of nvidia-smi -q and nvidia-imex-ctl -N (recorded layouts in
data/imex), a tray's own problems, the comparison with its super node's trays through the job
directory, the fake tools on PATH, and the cause it gives the attempt."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from slurm_supernode.chain.causes import Action, Cause
from slurm_supernode.runtime.classify import AttemptResult, decide, default_budgets
from slurm_supernode.runtime.imex_cause import imex_blame, nccl_imex_in_logs, nccl_imex_line
from slurm_supernode.runtime.imex_preflight import (
    exchange_dir,
    peer_problems,
    run_preflight,
    tray_problems,
)
from slurm_supernode.runtime.imex_probe import (
    FabricGpu,
    TrayFacts,
    channels_in,
    parse_domain_state,
    parse_fabric,
    tray_facts,
)

DATA = Path(__file__).parent / "data" / "imex"
UUID = "5d2b5c8f-1f0e-4c4f-9a51-6f1c2e8b0a01"


def gpus(state="Completed", uuid=UUID, clique="32766", n=4):
    return tuple(FabricGpu(f"0000000{i}:01:00.0", state, uuid, clique) for i in range(n))


def test_parse_fabric_of_a_gb200_tray():
    fabric = parse_fabric((DATA / "gb200-smi-q.txt").read_text())
    assert [g.bus_id for g in fabric] == [
        "00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0",
    ]  # fmt: skip
    assert {(g.state, g.cluster_uuid, g.clique_id) for g in fabric} == {
        ("Completed", UUID, "32766")
    }
    h200 = parse_fabric((DATA / "h200-smi-q.txt").read_text())
    assert h200 == (FabricGpu("00000000:18:00.0", "N/A", "", ""),)
    assert parse_fabric("GPU 00000000:18:00.0\n    Product Name : X\n") == ()


def test_parse_domain_state():
    assert parse_domain_state((DATA / "imex-ctl-N-up.txt").read_text()) == "UP"
    assert parse_domain_state((DATA / "imex-ctl-N-degraded.txt").read_text()) == "DEGRADED"
    assert parse_domain_state("Nodes:\n") is None


def test_channels_in(tmp_path):
    assert channels_in(str(tmp_path / "none")) is None
    assert channels_in(str(tmp_path)) == ()
    for name in ("channel12", "channel3", "other"):
        (tmp_path / name).touch()
    assert channels_in(str(tmp_path)) == (3, 12)


@pytest.mark.parametrize(
    ("facts", "fragment"),
    [
        (TrayFacts(None, None), "no IMEX channel: /dev/nvidia-caps-imex-channels is missing"),
        (TrayFacts((), None), "no IMEX channel: /dev/nvidia-caps-imex-channels is empty"),
        (TrayFacts((1,), "DEGRADED"), "IMEX domain state DEGRADED"),
        (TrayFacts((1,), None, "nvidia-imex-ctl -N exited 1: x"), "nvidia-imex-ctl -N exited 1"),
        (TrayFacts((1,), "UP", None, gpus("In Progress")), "fabric state In Progress"),
        (TrayFacts((1,), "UP", None, gpus()[:2] + gpus(clique="7")[2:]), "in 2 fabric cliques"),
        (TrayFacts((1,), "UP", None, gpus(uuid="")), "no multi-node NVLink fabric"),
        (TrayFacts((1,), "UP", None, ()), "no GPU with a Fabric section"),
    ],
)
def test_a_tray_on_its_own(facts, fragment):
    problems = tray_problems(facts)
    assert len(problems) >= 1 and fragment in problems[0]


def test_a_good_tray_and_one_without_the_tools():
    assert tray_problems(TrayFacts((1,), "UP", None, gpus())) == []
    assert tray_problems(TrayFacts((1,), None, None, None)) == []  # no tools: channel only


def test_the_odd_tray_of_a_super_node_is_named():
    order = ["n0", "n1", "n2", "n3"]
    rec = {h: {"channels": [1], "clique": f"{UUID}/1"} for h in order}
    assert all(peer_problems(h, order, rec) == [] for h in order)
    rec["n2"] = {"channels": [2], "clique": f"{UUID}/9"}
    assert peer_problems("n0", order, rec) == []
    problems = peer_problems("n2", order, rec)
    assert "IMEX channel channel2 differs from channel1 of 3 other tray(s)" in problems[0]
    assert f"fabric clique {UUID}/9 differs from {UUID}/1" in problems[1]
    # a tie goes to the first tray in site order: every agent decides alike
    tie = {"n0": {"channels": [1]}, "n1": {"channels": [2]}}
    assert peer_problems("n0", ["n0", "n1"], tie) == []
    assert peer_problems("n1", ["n0", "n1"], tie) != []


def test_trays_compare_through_the_job_directory(tmp_path):
    good = TrayFacts((1,), None, None, gpus())
    odd = TrayFacts((2,), None, None, gpus())
    segment = ["n0", "n1", "n2"]
    results = {}

    def agent(host, facts):
        results[host] = run_preflight(tmp_path, 0, host, segment, facts, wait_s=30)

    threads = [
        threading.Thread(target=agent, args=(h, f))
        for h, f in (("n0", good), ("n1", odd), ("n2", good))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["n0"][0] == [] and results["n2"][0] == []
    assert "channel2 differs from channel1" in results["n1"][0][0]
    assert sorted(p.name for p in exchange_dir(tmp_path, 0).iterdir()) == [
        "n0.json", "n1.json", "n2.json",
    ]  # fmt: skip


def test_a_peer_that_never_reports_is_not_waited_for(tmp_path):
    problems, seen = run_preflight(
        tmp_path, 1, "n0", ["n0", "n1"], TrayFacts((5,), None, None, None), wait_s=0.3
    )
    assert problems == [] and seen["channels"] == [5]


def test_fake_tools_on_path(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, data in (("nvidia-smi", "gb200-smi-q.txt"), ("nvidia-imex-ctl", "imex-ctl-N-up.txt")):
        (bin_dir / name).write_text(f"#!/bin/sh\ncat {DATA / data}\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin:/bin")
    channels = tmp_path / "channels"
    channels.mkdir()
    (channels / "channel4").touch()
    facts = tray_facts(str(channels))
    assert facts.channels == (4,) and facts.domain_state == "UP" and len(facts.fabric or ()) == 4
    assert tray_problems(facts) == []
    (bin_dir / "nvidia-imex-ctl").write_text("#!/bin/sh\necho 'connection refused' >&2; exit 1\n")
    facts = tray_facts(str(channels))
    assert "nvidia-imex-ctl -N exited 1: connection refused" in tray_problems(facts)[0]


def test_nccl_lines_name_the_cause(tmp_path):
    log = (
        "[rank3]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970\n"
        "gb002:1234:1290 [3] transport/nvls.cc:218 NCCL WARN Cuda failure 800 "
        "'operation not permitted'\n"
    )
    assert nccl_imex_line(log).startswith("gb002:1234:1290 [3] transport/nvls.cc:218")
    assert nccl_imex_line("NCCL WARN MNNVL is available but not working: no channel") is not None
    assert nccl_imex_line("Cuda failure 2 'out of memory'") is None
    logs = tmp_path / "logs" / "attempt0" / "n1" / "0"
    logs.mkdir(parents=True)
    (logs / "stderr.log").write_text("x\n" + log)
    assert nccl_imex_in_logs("no such line", tmp_path / "logs") is not None
    assert nccl_imex_in_logs("nothing", tmp_path / "missing") is None


def test_the_attempt_ends_with_cause_imex_and_the_tray_is_excluded():
    hosts = ["n0", "n1", "n2", "n3"]
    result = AttemptResult(
        step_exit=1,
        node_exits={"n1": 1, "n0": 143},
        hosts=hosts,
        failed_first=("n1",),
        imex_failed={"n1": "no IMEX channel: /dev/nvidia-caps-imex-channels is empty in this step"},
    )
    d = decide(result, [], default_budgets())
    assert (d.cause, d.action, d.exclude) == (Cause.IMEX, Action.REQUEUE, ("n1",))
    assert d.detail.startswith("IMEX on n1: no IMEX channel")
    # no tray of the job has a channel: Slurm gave none, no tray is to blame
    none = {
        h: "no IMEX channel: /dev/nvidia-caps-imex-channels is empty in this step" for h in hosts
    }
    blame, detail = imex_blame(none, hosts)
    assert blame == () and "Slurm gave none" in detail
    # NCCL on one tray is that tray's
    assert imex_blame({"n2": "NCCL: Cuda failure 800"}, hosts)[0] == ("n2",)
