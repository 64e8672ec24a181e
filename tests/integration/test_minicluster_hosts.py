"""Test clusters on the host's network (22.05, 25.11 and their variants) share /etc/hosts: each
keeps its own line, and one cluster's `down` never takes another's names, even where one state
dir's path begins with the other's (seen: the 22.05 cluster's down left the 25.11 cluster
running in /tmp/snrun-minicluster-25.11 unable to resolve its nodes, and its rendezvous hung)."""

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


def test_one_clusters_down_leaves_anothers_names(slurm_cluster) -> None:
    if slurm_cluster.namespaced:
        pytest.skip("a namespaced root has an /etc/hosts of its own")
    first, second = "/tmp/snrun-mc-hosts", "/tmp/snrun-mc-hosts-2"  # first's path begins second's
    shape = {"SNRUN_MC_SUPERNODES": "1", "SNRUN_MC_NODES_PER_SUPERNODE": "2",
             "SNRUN_MC_SPARES": "0"}  # fmt: skip

    def mc(state: str, port: int, *args: str) -> subprocess.CompletedProcess[str]:
        env = os.environ | shape | {"SNRUN_MC_DIR": state, "SNRUN_MC_CTLD_PORT": str(port),
                                    "SNRUN_MC_SLURMD_PORT": str(port + 1000)}  # fmt: skip
        return subprocess.run(["bash", str(MINICLUSTER), *args, "--slurm", slurm_cluster.slurm],
                              env=env, capture_output=True, text=True, timeout=600)  # fmt: skip

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
