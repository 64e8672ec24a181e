"""The local cluster itself: idempotent `up`, `status` codes, whole-super-node placement and
the topology address jobs see. (down/up cycles are left out: the session shares one cluster.)"""

from __future__ import annotations

import os
import subprocess

import pytest
from ClusterShell.NodeSet import NodeSet

from slurm_supernode.slurm import jobs

pytestmark = pytest.mark.slurm


def minicluster(cluster, *args: str, env: dict[str, str] | None = None):
    return subprocess.run(
        ["bash", str(cluster.minicluster), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_up_when_up_is_a_no_op(slurm_cluster):
    pid_file = slurm_cluster.state_dir / "run" / "slurmctld.pid"
    pid = pid_file.read_text().strip()
    proc = minicluster(slurm_cluster, "up", *slurm_cluster.up_args)
    assert proc.returncode == 0, proc.stderr
    assert "already up" in proc.stdout
    assert pid_file.read_text().strip() == pid  # nothing restarted


def test_up_with_another_shape_is_refused(slurm_cluster):
    proc = minicluster(slurm_cluster, "up", *slurm_cluster.up_args, "--gpus", "3")
    assert proc.returncode == 1
    assert "another shape: gpus=8 " in proc.stderr and "(asked: gpus=3" in proc.stderr
    assert "minicluster down" in proc.stderr


def test_status_exit_codes(slurm_cluster, tmp_path):
    up = minicluster(slurm_cluster, "status", *slurm_cluster.mc_args)
    assert up.returncode == 0, up.stdout + up.stderr
    assert "main*" in up.stdout and "debug" in up.stdout
    down = minicluster(
        slurm_cluster,
        "status",
        *slurm_cluster.mc_args,
        env={"SNRUN_MC_DIR": str(tmp_path / "none")},
    )
    assert down.returncode == 3 and "down" in down.stdout


def test_bad_usage_exits_2(slurm_cluster):
    assert minicluster(slurm_cluster, "frobnicate").returncode == 2
    assert minicluster(slurm_cluster, "up", "--supernodes", "0").returncode == 2


def test_bad_slurm_or_topology_exits_2(slurm_cluster):
    bad = [("--slurm", "23.02"), ("--topology", "torus")]
    for opt in bad:
        proc = minicluster(slurm_cluster, "up", *opt)
        assert proc.returncode == 2 and opt[1] in proc.stderr, proc.stderr


def test_node_names_resolve(slurm_cluster):
    """Where the cluster's processes run (the host, or the namespaces of another release)."""
    proc = subprocess.run(
        slurm_cluster.inside("getent", "hosts", slurm_cluster.nodes[0]),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == "127.0.0.1"


def test_exec_runs_inside_with_the_cluster_config(slurm_cluster):
    """`minicluster exec` runs clients where they reach the controller, with SLURM_CONF set."""
    proc = minicluster(slurm_cluster, "exec", *slurm_cluster.mc_args, "--", "scontrol", "ping")
    assert proc.returncode == 0 and "UP" in proc.stdout, proc.stdout + proc.stderr
    conf = minicluster(
        slurm_cluster, "exec", *slurm_cluster.mc_args, "--", "printenv", "SLURM_CONF"
    )
    assert conf.stdout.strip() == str(slurm_cluster.conf)


def test_version_is_the_one_asked_for(slurm_cluster):
    """--slurm 24.11 runs 24.11; the default runs the host's own slurmctld."""
    wanted = slurm_cluster.slurm
    if wanted == "host":
        wanted = subprocess.run(["slurmctld", "-V"], capture_output=True, text=True).stdout
    major, minor = slurm_cluster.version
    assert f"{major}.{minor:02d}" in wanted


def test_constraint_keeps_a_job_in_one_super_node(slurm_cluster, tmp_path):
    """With the first node busy, a 4-node job could straddle two super nodes; the one-of
    constraint `[sn0|sn1]` must give it a whole super node, and jobs see its leaf switch."""
    features = sorted(slurm_cluster.supernodes)
    size = len(slurm_cluster.supernodes[features[0]])
    first = slurm_cluster.nodes[0]
    blocker = jobs.submit(
        "#!/bin/bash\nsleep 300\n", ["-w", first, "--exclusive", "-o", "/dev/null"], cwd=tmp_path
    )
    try:
        jobs.wait_for(blocker, {"RUNNING"}, 30)
        out = tmp_path / "topo.txt"
        job = jobs.submit(
            "#!/bin/bash\nsrun bash -c 'echo $SLURMD_NODENAME $SLURM_TOPOLOGY_ADDR'\n",
            [f"-N{size}", f"--constraint=[{'|'.join(features)}]", "-o", str(out)],
            cwd=tmp_path,
        )
        info = jobs.wait_for(job, set(), 30)
        assert str(info.state) == "COMPLETED", info
        got = set(NodeSet(info.nodelist))
        homes = [f for f, members in slurm_cluster.supernodes.items() if got == set(members)]
        assert len(homes) == 1, f"{got} is not one whole super node"
        assert first not in got
        lines = [ln.split() for ln in out.read_text().splitlines() if ln.strip()]
        assert {node for node, _ in lines} == got
        for node, addr in lines:  # tree: spine.sn0.n1, block: sn0.n1
            assert addr == slurm_cluster.topology_addr(homes[0], node)
    finally:
        jobs.cancel(blocker)


def test_env_sh_gives_the_docs_commands_this_clusters_site_jobs_and_results(slurm_cluster):
    """`source env.sh` is all a shell needs: the site the cluster was made from, and a jobs dir
    and a bench database of its own (job ids restart at 1 on every cluster)."""
    sdir = slurm_cluster.state_dir
    snrun = "python -m slurm_supernode"
    script = f". {sdir}/env.sh; env; {snrun} status; {snrun} plan --nodelist 'n[0-3]'"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("SNRUN_", "SLURM_"))}
    proc = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=120, env=clean
    )
    assert proc.returncode == 0, proc.stderr
    env = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    assert env["SLURM_CONF"] == str(slurm_cluster.conf)
    assert env["SNRUN_SITE"] == f"{sdir}/etc/site.yaml"
    assert env["SNRUN_JOBS_DIR"] == f"{sdir}/jobs"
    assert env["SNRUN_BENCH_DB"] == f"{sdir}/bench.sqlite"
    assert f"no snrun jobs of yours under {sdir}/jobs" in proc.stdout
    assert "Plan: 32 ranks = 4 nodes x 8 on 1 super node (site local)" in proc.stdout  # no --site
