"""`snrun doctor` on the real local cluster (2 super nodes x 4 nodes, fake GPUs, gloo).

The whole doctor runs as a job on both super nodes with a slowness injected into one node's
ranks (``SNRUN_DOCTOR_SLOW_NODE``): the checklist must name that node, say clearly that there
are no GPUs (not crash), test both storage directories and store the bench run. Then the
in-job part runs as an overlapping step inside a running job (``--job``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_supernode.bench.store import open_store
from slurm_supernode.slurm import job_lookup, jobs
from tests.integration.helpers import pythonpath

pytestmark = pytest.mark.slurm
ROOT = Path(__file__).resolve().parents[2]


def snrun(*args: str, env: dict | None = None, timeout: float = 400):
    full = {**os.environ, "PYTHONPATH": pythonpath(), **(env or {})}
    full.pop("SNRUN_BENCH_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "slurm_supernode", *args],
        cwd=ROOT,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def site_file(tmp_path) -> str:
    text = (ROOT / "site-configs" / "local.yaml").read_text()
    text = text.replace("jobs_dir: ~/.snrun/jobs", f"jobs_dir: {tmp_path}/jobs")
    text = text.replace("results_db: ~/.snrun/bench.sqlite", f"results_db: {tmp_path}/r.sqlite")
    (tmp_path / "ckpt").mkdir()
    text += f"doctor:\n  storage_mb: 4\n  slow_pct: 40\n  checkpoint_dir: {tmp_path}/ckpt\n"
    path = tmp_path / "local.yaml"
    path.write_text(text)
    return str(path)


def test_doctor_job_names_the_injected_slow_node_and_reports_no_gpus(site_file, tmp_path):
    proc = snrun(
        "doctor",
        "--site",
        site_file,
        "--nproc-per-node",
        "2",
        "--backend",
        "gloo",
        "--iters",
        "3",
        "-t",
        "00:10:00",
        env={"SNRUN_DOCTOR_SLOW_NODE": "n5:0.15"},
    )
    out = proc.stdout
    # On a machine so busy that a typical group's figures move by over half between repeats
    # the doctor judges nothing (docs/doctor.md, "Too noisy to judge"): n5 is then named in a
    # warning that says why, and no other node is failed instead.
    noisy = "too noisy to judge" in out
    assert proc.returncode == (1 if noisy else 2), out + proc.stderr
    assert out.startswith(f"SNRUN DOCTOR {'WARN' if noisy else 'FAIL'} - site local, job ")
    assert "8 node(s)" in out.splitlines()[0]
    if noisy:
        warned = [ln for ln in out.splitlines() if ln.lstrip().startswith("warn")]
        assert any(ln.split()[2:3] == ["n5:"] and "too noisy to judge" in ln for ln in warned)
        assert not any(ln.lstrip().startswith("fail") for ln in out.splitlines()), out
    else:  # step 3 bisection: n5 is the node, not a pair or a super node only
        assert "slow-node       n5 is slow in both pairings" in out, out
    # super node sn1 (holding n5) below sn0, judged against sn0 rather than the mean of both;
    # a failure when steady over the repeats, a warning when the load blurs it, sn1 either way
    sn_lines = [line for line in out.splitlines() if line.split()[1:2] == ["supernode"]]
    assert any(line.endswith("[sn1]") for line in sn_lines), out
    assert not any("[sn0]" in line for line in sn_lines), out
    # step 1: clearly no GPUs, not a crash; the fake device files are there
    assert "no NVIDIA driver" in out and "there are no GPUs here" in out
    assert "8 of 8 devices visible [n[0-7]]" in out
    assert "no GPUs: torch sees no CUDA device on any node (backend gloo)" in out
    assert "not comparable with the device links" in out  # step 4 on CPUs
    # step 6: the job directory and the site's checkpoint directory, on every node
    assert f"{tmp_path}/ckpt: write" in out and f"{tmp_path}/jobs/" in out
    (job_dir,) = (tmp_path / "jobs").glob("snrun-doctor*")
    page = (job_dir / "doctor.html").read_text()
    assert ("too noisy to judge" if noisy else "n5 is slow in both pairings") in page
    report = json.loads((job_dir / "doctor.json").read_text())
    assert report["verdict"] == ("warn" if noisy else "fail") and len(report["hosts"]) == 8
    with open_store(tmp_path / "r.sqlite") as store:
        (run,) = store.runs()
        scopes = {r.scope for r in store.results(run_id=run.run_id)}
    assert scopes == {"node", "pairs", "pairs_shift", "supernode", "inter"}
    assert run.site == "local" and run.nodes == 8 and run.job_id == report["job_id"]


def test_doctor_inside_a_running_job_as_an_overlapping_step(site_file, tmp_path):
    job_id = jobs.submit(
        "#!/bin/bash\nsleep 600\n",
        [
            "--nodes=2",
            "--nodelist=n[2-3]",
            "--job-name=doctor-host",
            f"--output={tmp_path}/host-%j.out",
        ],
        cwd=str(tmp_path),
    )
    try:
        info = jobs.wait_for(job_id, ("RUNNING",), timeout=60)
        assert str(info.state) == "RUNNING"
        proc = snrun(
            "doctor",
            "--site",
            site_file,
            "--job",
            str(job_id),
            "--nproc-per-node",
            "1",
            "--backend",
            "gloo",
            "--iters",
            "2",
            "--json",
        )
        assert proc.stdout.startswith("{"), proc.stdout + proc.stderr
        data = json.loads(proc.stdout)
        # no failure: unknowns (no GPUs) and the warning that the job holds part of super node
        # sn0. A storage warning ("slowest writer") may come too: both nodes write to this
        # machine's one disk while other work loads it, so their speeds differ by chance.
        findings = [f for s in data["steps"] for f in s["findings"]]
        flagged = {f["check"]: f["verdict"] for f in findings if f["verdict"] in ("warn", "fail")}
        assert flagged.get("whole-supernodes") == "warn", proc.stdout
        assert set(flagged) <= {"whole-supernodes", "storage"}, proc.stdout
        assert set(flagged.values()) == {"warn"}, proc.stdout
        assert proc.returncode == 1 and data["verdict"] == "warn"
        assert any(f["check"] == "compute" and f["verdict"] == "unknown" for f in findings)
        assert data["hosts"] == ["n2", "n3"] and data["job_id"] == str(job_id)
        cross = next(s for s in data["steps"] if s["step"] == "cross")
        pairs = next(f for f in cross["findings"] if f["check"] == "pairs")
        assert pairs["verdict"] == "ok" and "1 node pairs" in pairs["measured"]
        assert job_lookup.job_info(job_id).running  # the job itself kept running
    finally:
        jobs.cancel(job_id)
