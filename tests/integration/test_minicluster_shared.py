"""What test clusters on one machine share: /etc/hosts (the clusters on the host's network:
22.05, 25.11 and their variants) and site-configs/local.yaml's fake devices (every cluster that
runs jobs with that site). One cluster's `down` never takes another's: its /etc/hosts line stays,
even where one state dir's path begins with the other's (seen: the 22.05 cluster's down left the
25.11 cluster unable to resolve its nodes, and its rendezvous hung), and the devices stay while
another cluster uses them, whoever made them (seen: 25.11's down removed them under CI's 24.11
cluster, whose next job failed its health check on every node)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.slurm_cluster import MINICLUSTER

pytestmark = pytest.mark.slurm

MARK = "# snrun-minicluster "


def lines_of(state: str) -> list[str]:
    return [ln for ln in Path("/etc/hosts").read_text().splitlines() if ln.endswith(MARK + state)]


def resolves(name: str) -> bool:
    return subprocess.run(["getent", "hosts", name], capture_output=True).returncode == 0


def minicluster(slurm: str, **env: str):
    """``mc(state, port, *args)``: a small host-network cluster of its own state dir and ports."""
    shape = {"SNRUN_MC_SUPERNODES": "1", "SNRUN_MC_NODES_PER_SUPERNODE": "2",
             "SNRUN_MC_SPARES": "0"}  # fmt: skip

    def mc(state: str, port: int, *args: str) -> subprocess.CompletedProcess[str]:
        ports = {"SNRUN_MC_CTLD_PORT": str(port), "SNRUN_MC_SLURMD_PORT": str(port + 1000)}
        run_env = os.environ | shape | env | ports | {"SNRUN_MC_DIR": state}
        return subprocess.run(["bash", str(MINICLUSTER), *args, "--slurm", slurm],
                              env=run_env, capture_output=True, text=True, timeout=600)  # fmt: skip

    return mc


def test_one_clusters_down_leaves_anothers_names(slurm_cluster) -> None:
    if slurm_cluster.namespaced:
        pytest.skip("a namespaced root has an /etc/hosts of its own")
    first, second = "/tmp/snrun-mc-hosts", "/tmp/snrun-mc-hosts-2"  # first's path begins second's
    mc = minicluster(slurm_cluster.slurm)
    try:
        for state, port in ((first, 6851), (second, 6853)):
            up = mc(state, port, "up")
            assert up.returncode == 0, up.stderr
        assert len(lines_of(first)) == 1 and len(lines_of(second)) == 1
        assert mc(first, 6851, "down").returncode == 0
        assert lines_of(first) == [] and len(lines_of(second)) == 1
        assert "n0" in lines_of(second)[0].split() and resolves("n0")
    finally:
        mc(first, 6851, "down")
        mc(second, 6853, "down")
    assert lines_of(second) == []


def test_the_local_sites_devices_stay_while_another_cluster_uses_them(slurm_cluster) -> None:
    """Two clusters use the devices (here at a path of the test's own); the first made them
    and goes down first: they stay for the second, and go with it."""
    if slurm_cluster.namespaced:
        pytest.skip("the host's network clusters: the namespaced ones share the same code path")
    dev = Path("/tmp/snrun-mc-devs/dev")
    mc = minicluster(slurm_cluster.slurm, SNRUN_MC_LOCAL_DEV=str(dev))
    first, second = "/tmp/snrun-mc-devs-a", "/tmp/snrun-mc-devs-b"
    try:
        for state, port in ((first, 6855), (second, 6857)):
            up = mc(state, port, "up")
            assert up.returncode == 0, up.stderr
            assert sorted(p.name for p in dev.iterdir()) == [f"nvidia{i}" for i in range(8)]
        assert mc(first, 6855, "down").returncode == 0
        assert sorted(p.name for p in dev.iterdir()) == [f"nvidia{i}" for i in range(8)]
        assert mc(second, 6857, "down").returncode == 0
        assert not dev.exists()
    finally:
        mc(first, 6855, "down")
        mc(second, 6857, "down")
