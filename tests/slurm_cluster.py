"""pytest plugin: the real local Slurm cluster (contrib/minicluster) for tests marked `slurm`.

The cluster is booted once per session, or reused when it is already up (then it is left up).
Only a cluster this session booted is torn down at the end. Tests marked `slurm` FAIL (not
skip) when the cluster cannot be had, so CI really runs them; `SNRUN_SKIP_SLURM=1` skips them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MINICLUSTER = ROOT / "contrib" / "minicluster" / "minicluster"


@dataclass(frozen=True)
class SlurmCluster:
    """The running cluster as tests see it; `supernodes` maps feature (sn0, ...) -> nodes."""

    conf: Path
    state_dir: Path
    nodes: tuple[str, ...]
    supernodes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    minicluster: Path = MINICLUSTER
    booted_here: bool = False


def state_dir() -> Path:
    return Path(os.environ.get("SNRUN_MC_DIR", "/tmp/snrun-minicluster"))


def _why_not_available() -> str | None:
    if os.geteuid() != 0:
        return "the local Slurm cluster needs root (it starts munged, slurmctld and slurmd)"
    for cmd in ("slurmctld", "slurmd", "sbatch", "munged"):
        if shutil.which(cmd) is None:
            return f"{cmd} not found: run 'make install' (apt-get install slurm-wlm munge)"
    return None


def _minicluster(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(MINICLUSTER), *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """Boot (or reuse) the minicluster; sets SLURM_CONF for the whole session."""
    if os.environ.get("SNRUN_SKIP_SLURM") == "1":
        pytest.skip("SNRUN_SKIP_SLURM=1: real-cluster tests skipped")
    why = _why_not_available()
    if why:
        pytest.fail(f"{why} (or set SNRUN_SKIP_SLURM=1 to skip tests marked slurm)", pytrace=False)
    booted = _minicluster("status").returncode != 0
    if booted:
        up = _minicluster("up")
        if up.returncode != 0:
            why = up.stderr.strip() or up.stdout.strip()
            pytest.fail(f"minicluster up failed: {why}", pytrace=False)
    sdir = state_dir()
    conf = sdir / "etc" / "slurm.conf"
    old_conf = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(conf)
    try:
        from slurm_supernode.slurm.nodes import node_infos

        infos = node_infos()
        supernodes: dict[str, list[str]] = {}
        for n in infos:
            for f in n.features:
                supernodes.setdefault(f, []).append(n.name)
        yield SlurmCluster(
            conf=conf,
            state_dir=sdir,
            nodes=tuple(n.name for n in infos),
            supernodes={k: tuple(v) for k, v in sorted(supernodes.items())},
            booted_here=booted,
        )
    finally:
        if old_conf is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old_conf
        if booted:
            _minicluster("down")


@pytest.fixture(autouse=True)
def _slurm_marked(request: pytest.FixtureRequest) -> None:
    """Tests marked `slurm` get the cluster even if they do not ask for the fixture."""
    if request.node.get_closest_marker("slurm") is not None:
        request.getfixturevalue("slurm_cluster")
