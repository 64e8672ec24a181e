"""The rack-scale cluster of `make test-scale`: 8 super nodes x 18 trays (16 used + 2 spare).

The tests here are marked `scale` (and `slurm`): `make integration` leaves them out. They need
the cluster booted with that shape and the job_submit.lua plugin, which `make test-scale` asks
for through the minicluster's SNRUN_MC_* variables; on another shape they fail and say how.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from slurm_supernode.site.loader import load_site
from slurm_supernode.site.model import Site

SUPERNODES = 8
TRAYS = 18
SPARES = 2


@dataclass(frozen=True)
class Rack:
    """The scale cluster as the tests use it: the site it was exported from, Slurm's view."""

    cluster: object  # tests.slurm_cluster.SlurmCluster
    site: Site
    site_file: Path
    supernodes: dict[str, tuple[str, ...]]  # sn0 -> its 18 nodes, from Slurm's features
    lua: bool

    def supernode_of(self, node: str) -> str:
        return next(sn for sn, nodes in self.supernodes.items() if node in nodes)


@pytest.fixture(scope="session")
def rack(slurm_cluster) -> Rack:
    sns = {k: v for k, v in slurm_cluster.supernodes.items() if k.startswith("sn")}
    shape = sorted({len(v) for v in sns.values()})
    if len(sns) != SUPERNODES or shape != [TRAYS]:
        pytest.fail(
            f"scale tests need {SUPERNODES} super nodes x {TRAYS} nodes, the cluster has "
            f"{len(sns)} x {shape} (hint: make test-scale, or 'minicluster down' first)",
            pytrace=False,
        )
    site_file = slurm_cluster.state_dir / "etc" / "site.yaml"
    site = load_site(str(site_file))
    if {sn.spares for sn in site.supernodes} != {SPARES}:
        pytest.fail(f"scale tests need spares: {SPARES} in {site_file}", pytrace=False)
    lua = "JobSubmitPlugins=lua" in slurm_cluster.conf.read_text().splitlines()
    return Rack(slurm_cluster, site, site_file, sns, lua)
