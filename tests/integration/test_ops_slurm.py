"""Bench jobs, nightly chains and node health on the real local cluster (2 x 4 nodes).

Each test leaves the cluster as it found it: drained nodes are resumed, chained jobs
cancelled. Kept small for a 2-core machine: gloo, two message sizes, few iterations.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path

import pytest

from slurm_supernode.bench.store import open_store
from slurm_supernode.slurm import job_lookup, jobs, nodes
from tests.integration.helpers import pythonpath

pytestmark = pytest.mark.slurm
ROOT = Path(__file__).resolve().parents[2]


def snrun(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": pythonpath()}
    env.pop("SNRUN_BENCH_DB", None)
    return subprocess.run([sys.executable, "-m", "slurm_supernode", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip


@pytest.fixture
def site_file(tmp_path) -> str:
    """The local site with its state, jobs and results under tmp_path."""
    text = (ROOT / "site-configs" / "local.yaml").read_text()
    text = text.replace("jobs_dir: ~/.snrun/jobs", f"jobs_dir: {tmp_path}/jobs")
    text = text.replace("results_db: ~/.snrun/bench.sqlite", f"results_db: {tmp_path}/r.sqlite")
    text += f"  state_dir: {tmp_path}/state\n"
    path = tmp_path / "local.yaml"
    path.write_text(text)
    return str(path)


def test_bench_job_over_both_supernodes_fills_db_and_regression_exits_3(site_file, tmp_path):
    proc = snrun("bench", "submit", "--site", site_file, "--supernodes", "sn0,sn1",
                 "--nproc-per-node", "2", "--backend", "gloo", "--sizes", "1K,64K",
                 "--collectives", "all_reduce,broadcast", "--scopes", "node,supernode,inter",
                 "--iters", "3", "--warmup", "1", "--parsable", "--wait")  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    job_id = proc.stdout.split()[0]
    with open_store(tmp_path / "r.sqlite") as store:
        (run,) = store.runs()
        rows = store.results(run_id=run.run_id)
        full = store.get_run(run.run_id)
    assert (run.site, run.supernode, run.nodes, run.job_id) == ("local", "sn0,sn1", 8, job_id)
    assert len(run.hosts) >= 1 and run.world_size == 16
    by_scope = {r.scope: r for r in rows}
    assert set(by_scope) == {"node", "supernode", "inter"}
    assert (by_scope["node"].group_size, by_scope["supernode"].group_size,
            by_scope["inter"].group_size) == (2, 8, 2)  # fmt: skip
    assert all(r.wrong == 0 and r.busbw > 0 for r in rows)

    # Inject a slower night: every busbw halved, a day later.
    slow = dataclasses.replace(
        full, run_id=uuid.uuid4().hex, time=full.time + 86400, job_id="injected",
        results=tuple(dataclasses.replace(r, busbw=r.busbw / 2, algbw=r.algbw / 2)
                      for r in full.results))  # fmt: skip
    with open_store(tmp_path / "r.sqlite") as store:
        store.add_run(slow)
    rep = snrun("bench", "report", "--site", site_file, "--min-bytes", "1K")
    assert rep.returncode == 3, rep.stdout + rep.stderr
    assert "REGRESSION" in rep.stdout and "-50.0%" in rep.stdout


@pytest.fixture
def spare_node(slurm_cluster):
    """n7, resumed at the end whatever the test did to it (it must start undrained)."""
    name = "n7"
    (info,) = nodes.node_infos(name)
    if info.drained:
        pytest.fail(f"{name} is drained already ({info.reason}): not touching it")
    try:
        yield name
    finally:
        (info,) = nodes.node_infos(name)
        if info.drained:
            nodes.resume(name)


def test_health_drains_with_prefix_and_resumes_only_its_own(site_file, spare_node):
    n = spare_node
    bad = snrun("health", "--site", site_file, "--node", n, "--expect-devices", "99", "--drain")
    assert bad.returncode == 2, bad.stdout + bad.stderr
    (info,) = nodes.node_infos(n)
    assert info.drained and info.reason.startswith("snrun: devices: 8 of 99")

    ok = snrun("health", "--site", site_file, "--node", n, "--resume-ok")
    assert ok.returncode == 0 and "action: resume" in ok.stdout, ok.stdout + ok.stderr
    (info,) = nodes.node_infos(n)
    assert not info.drained

    nodes.drain(n, "admin: replace fan")
    kept = snrun("health", "--site", site_file, "--node", n, "--resume-ok")
    assert kept.returncode == 0 and "action" not in kept.stdout
    again = snrun("health", "--site", site_file, "--node", n, "--expect-devices", "99", "--drain")
    assert again.returncode == 2 and "reason kept" in again.stderr
    (info,) = nodes.node_infos(n)
    assert info.drained and info.reason == "admin: replace fan"


def test_nightly_chain_job_submits_its_successor_with_begin(site_file):
    name = f"t{uuid.uuid4().hex[:6]}"
    at = "03:17"
    proc = snrun("bench", "schedule", "--nightly", at, "--mode", "chain", "--run-now",
                 "--name", name, "--site", site_file, "--supernodes", "sn0",
                 "--nproc-per-node", "1", "--backend", "gloo", "--sizes", "1K",
                 "--collectives", "all_reduce", "--scopes", "world", "--iters", "1",
                 "--warmup", "0", "--time", "5")  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = int(proc.stdout.split()[3])
    job_name = f"snrun-bench-nightly-{name}"
    try:
        deadline = time.monotonic() + 120
        successors = []
        while time.monotonic() < deadline and not successors:
            successors = [j for j in job_lookup.jobs_named(job_name) if j.job_id != first]
            time.sleep(1)
        assert len(successors) == 1, f"no successor of job {first}"
        (nxt,) = successors
        # Reason says BeginTime on an idle cluster, Resources while other jobs hold the nodes:
        # the begin time below is what holds it back.
        assert nxt.pending
        start = nxt.start_time
        assert start is not None and start > datetime.now()
        assert start.strftime("%H:%M") == at and (start - datetime.now()).days < 1
        listed = snrun("bench", "schedule", "--list", "--site", site_file)
        assert name in listed.stdout and f"{nxt.job_id}:PENDING" in listed.stdout
    finally:
        removed = snrun("bench", "schedule", "--remove", name, "--site", site_file)
        jobs.cancel(first)
    assert removed.returncode == 0, removed.stderr
    for job in job_lookup.jobs_named(job_name):
        info = jobs.wait_for(job.job_id, (), timeout=30)
        assert info.ended
    gone = snrun("bench", "schedule", "--list", "--site", site_file)
    assert name not in gone.stdout
