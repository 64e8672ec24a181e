"""job_submit.lua inside the real slurmctld (JobSubmitPlugins=lua): plain sbatch in a super node
partition lands on a whole super node, an impossible request is refused at submit with the
plugin's message, another partition is untouched, snrun's own heterogeneous job passes as is.

Uses the default local cluster when it already runs the plugin; otherwise boots a second one
with the plugin in its own state dir and ports (the default cluster is never restarted)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from ClusterShell.NodeSet import NodeSet

from slurm_supernode.launch.jobspec import JobSpec
from slurm_supernode.launch.request import plan_request
from slurm_supernode.site.loader import load_site
from slurm_supernode.slurm import jobs
from slurm_supernode.slurm.nodes import node_infos

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 30
OWN = {
    "SNRUN_MC_DIR": "/tmp/snrun-mc-lua-pytest",
    "SNRUN_MC_CTLD_PORT": "6927",
    "SNRUN_MC_SLURMD_PORT": "17200",
}


def _minicluster(cluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **OWN}
    env.pop("SLURM_CONF", None)
    cmd = ["bash", str(cluster.minicluster), *args]
    if args[0] == "up":
        cmd += [*cluster.up_args, "--job-submit-lua"]
    else:
        cmd += cluster.mc_args
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.fixture(scope="module")
def lua_conf(slurm_cluster) -> Iterator[Path]:
    """slurm.conf of a cluster running job_submit/lua; SLURM_CONF points at it meanwhile."""
    booted = False
    if "JobSubmitPlugins=lua" in slurm_cluster.conf.read_text().splitlines():
        conf = slurm_cluster.conf
    else:
        up = _minicluster(slurm_cluster, "up")
        if up.returncode != 0:
            pytest.fail(f"lua minicluster up failed: {up.stderr.strip()}", pytrace=False)
        booted = True
        conf = Path(OWN["SNRUN_MC_DIR"]) / "etc" / "slurm.conf"
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(conf)
    try:
        yield conf
    finally:
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old
        if booted:
            _minicluster(slurm_cluster, "down")


def sbatch(tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sbatch", "--parsable", "-o", "/dev/null", *args],
        input="#!/bin/bash\ntrue\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )


def supernodes_of(nodelist: str) -> set[str]:
    return {f for n in node_infos(nodelist) for f in n.features}


def test_plain_sbatch_is_rounded_up_to_one_whole_super_node(lua_conf, tmp_path):
    proc = sbatch(tmp_path, "-N3")
    assert proc.returncode == 0, proc.stderr
    assert "-N 3 became -N 4" in proc.stderr  # the plugin's note reaches the user
    info = jobs.wait_for(jobs.parse_job_id(proc.stdout), set(), TIMEOUT)
    assert (str(info.state), info.partition, info.num_nodes) == ("COMPLETED", "main", 4)
    features = supernodes_of(info.nodelist)
    assert len(features) == 1  # one super node ...
    (feature,) = features
    everyone = {n.name for n in node_infos() if feature in n.features}
    assert set(NodeSet(info.nodelist)) == everyone  # ... and all of it


def test_impossible_request_is_refused_at_submit(lua_conf, tmp_path):
    proc = sbatch(tmp_path, "-N9")
    assert proc.returncode != 0 and not proc.stdout.strip()
    assert "can never fit" in proc.stderr and "at most 8 nodes" in proc.stderr
    assert "Node count specification invalid" in proc.stderr


def test_other_partition_is_untouched(lua_conf, tmp_path):
    proc = sbatch(tmp_path, "-p", "debug", "-N3")
    assert proc.returncode == 0, proc.stderr
    assert "snrun job_submit" not in proc.stderr
    info = jobs.wait_for(jobs.parse_job_id(proc.stdout), set(), TIMEOUT)
    assert (str(info.state), info.partition, info.num_nodes) == ("COMPLETED", "debug", 3)


def test_snrun_heterogeneous_job_passes_unchanged(lua_conf, tmp_path):
    site = load_site(str(ROOT / "site-configs" / "local.yaml"))
    req = plan_request(JobSpec(program="train.py", supernodes=2, time="5"), site, None)
    assert req.heterogeneous and len(req.components) == 2
    proc = subprocess.run(
        ["sbatch", "--parsable", *req.sbatch_args()],
        input="#!/bin/bash\ntrue\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "snrun job_submit" not in proc.stderr
    first = jobs.parse_job_id(proc.stdout)
    infos = [jobs.wait_for(first + i, set(), TIMEOUT) for i in range(2)]
    assert all(i.state.base == "COMPLETED" and i.num_nodes == 4 for i in infos), infos
    got = [supernodes_of(i.nodelist) for i in infos]
    assert all(len(g) == 1 for g in got) and got[0] != got[1]


def test_up_refuses_to_switch_the_plugin_off_while_running(lua_conf, slurm_cluster):
    env = {**os.environ, "SNRUN_MC_DIR": str(lua_conf.parent.parent)}
    env["SNRUN_MC_JOB_SUBMIT_LUA"] = "0"
    proc = subprocess.run(
        ["bash", str(slurm_cluster.minicluster), "up", *slurm_cluster.up_args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 1
    assert "another shape: job-submit-lua=1" in proc.stderr, proc.stderr
    assert "minicluster down" in proc.stderr
