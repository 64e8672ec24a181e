"""The local cluster is booted from `snrun site export` of site-configs/local.yaml: the real
slurmctld must accept those files and report the site's topology (switches for topology/tree,
blocks for topology/block or topology.yaml), features and GPUs."""

from __future__ import annotations

import subprocess

import pytest

from slurm_supernode.hostlist import expand
from slurm_supernode.site.loader import load_site
from slurm_supernode.slurm.nodes import node_infos

pytestmark = pytest.mark.slurm


def test_scontrol_topology_and_features_agree_with_the_site(slurm_cluster) -> None:
    site = load_site(str(slurm_cluster.state_dir / "etc" / "site.yaml"))
    out = subprocess.run(
        ["scontrol", "show", "topology"], capture_output=True, text=True, check=True
    ).stdout
    groups = {}
    key = "BlockName" if slurm_cluster.topology == "block" else "SwitchName"
    for line in out.splitlines():
        fields = dict(w.split("=", 1) for w in line.split() if "=" in w)
        if key in fields and fields.get("Level", "0") == "0":  # leaf switches / base blocks
            groups[fields[key]] = set(expand(fields["Nodes"]))
    assert groups == {sn.name: set(sn.hostnames) for sn in site.supernodes}
    if slurm_cluster.topology == "block":  # the aggregate of all blocks (BlockSizes=4,8)
        assert any(ln.startswith("AggregatedBlock=") for ln in out.splitlines()), out
    else:
        spine = next(
            ln for ln in out.splitlines() if ln.startswith(f"SwitchName={site.slurm.spine_switch}")
        )
        assert "Level=1" in spine
    infos = {n.name: n for n in node_infos()}
    for sn in site.supernodes:
        for node in sn.nodes:
            assert sn.feature in infos[node.hostname].features
            assert infos[node.hostname].gres and f"gpu:{node.devices}" in infos[node.hostname].gres
