"""pytest plugin: the real local Slurm cluster (contrib/minicluster) for tests marked `slurm`.

The cluster is booted once per session, or reused when it is already up (then it is left up).
Only a cluster this session booted is torn down at the end. Tests marked `slurm` FAIL (not
skip) when the cluster cannot be had, so CI really runs them; `SNRUN_SKIP_SLURM=1` skips them.

Which cluster: `SNRUN_SLURM` (`host`, the default: this machine's Slurm, 22.05 on Debian 12;
or `24.11` / `26.05`: a Debian root in namespaces, see contrib/minicluster/README.md) and
`SNRUN_TOPOLOGY` (`tree`, the default, `block` or `yaml`). A namespaced cluster's clients run
inside through the wrappers of contrib/minicluster/clients, which the fixture puts first on
PATH (they follow SLURM_CONF), so tests and the snrun subprocesses they start submit as usual.
`25.11` is Slurm built from source (a prefix, on the host's network): the same wrappers call
its clients, and the pyslurm built against it goes on PYTHONPATH with
`SNRUN_SLURM_BACKEND=pyslurm`, so every query of the suite goes through pyslurm (or fails).
Tests read what the running cluster says (`topology`, `version`), never assume one release.
"""

from __future__ import annotations

import os
import re
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
    slurm: str = "host"  # what was asked: host, 22.05, 24.11, 25.11, 26.05
    topology_option: str = "tree"  # what was asked: tree, block, yaml
    version: tuple[int, int] = (0, 0)  # what runs, from `sinfo --version`
    topology: str = "tree"  # what the running cluster lists: tree (switches) or block
    namespaced: bool = False  # clients must run inside (the PATH wrappers do it)
    slurm_prefix: Path | None = None  # a Slurm built from source (25.11): its bin/ and sbin/

    @property
    def mc_args(self) -> list[str]:
        """The minicluster options that name this cluster (for status/down/exec)."""
        return ["--slurm", self.slurm]

    @property
    def up_args(self) -> list[str]:
        """The minicluster options `up` needs to find this very cluster already up (its
        container runtimes as its shape records them)."""
        try:
            shape = (self.state_dir / "shape").read_text()
        except OSError:
            shape = ""
        found = re.search(r"\bcontainers=(\S+)", shape)
        extra = [f"--containers={found[1]}"] if found else []
        return [*self.mc_args, "--topology", self.topology_option, *extra]

    def inside(self, *argv: str) -> list[str]:
        """argv that runs where the cluster's processes live (PIDs, /proc, host names), with
        the cluster's own Slurm programs (`slurmctld -V`, `slurmd`) first on PATH: a Slurm built
        from source runs on the host, whose PATH finds the host's Slurm."""
        if self.slurm_prefix is not None:
            bins = f"{self.slurm_prefix}/sbin:{self.slurm_prefix}/bin"
            return ["env", f"PATH={bins}:{os.environ.get('PATH', '')}", *argv]
        if not self.namespaced:
            return list(argv)
        return ["bash", str(self.minicluster), "exec", *self.mc_args, "--", *argv]

    def topology_addr(self, supernode: str, node: str, spine: str = "spine") -> str:
        """SLURM_TOPOLOGY_ADDR of ``node`` as this cluster's topology plugin forms it."""
        if self.topology == "block":
            return f"{supernode}.{node}"
        return f"{spine}.{supernode}.{node}"


NAMESPACED_SLURM = ("24.11", "26.05")  # Debian roots in namespaces (contrib/minicluster)


def wanted_slurm() -> str:
    return os.environ.get("SNRUN_SLURM", "host")


def wanted_topology() -> str:
    return os.environ.get("SNRUN_TOPOLOGY", "tree")


def state_dir() -> Path:
    """The state dir of the wanted cluster (as `minicluster env` says)."""
    return Path(_cluster_env()["SNRUN_MC_DIR"])


def _cluster_env() -> dict[str, str]:
    out = _minicluster("env", "--slurm", wanted_slurm())
    return dict(ln.split("=", 1) for ln in out.stdout.splitlines() if "=" in ln)


def _running_topology() -> str:
    """`block` when the running controller lists blocks, else `tree`."""
    from slurm_supernode.errors import SlurmError
    from slurm_supernode.slurm.runner import run_slurm

    for args in (["show", "topology"], ["show", "topology", "block"]):
        try:
            out = run_slurm(["scontrol", *args], timeout=15).stdout
        except SlurmError:  # 22.05 has no 'topology block' argument
            continue
        if re.search(r"^BlockName=", out, re.M):
            return "block"
    return "tree"


def _why_not_available() -> str | None:
    if os.geteuid() != 0:
        return "the local Slurm cluster needs root (it starts munged, slurmctld and slurmd)"
    for cmd in ("slurmctld", "slurmd", "sbatch", "munged"):
        if shutil.which(cmd) is None:
            return f"{cmd} not found: run 'make install' (apt-get install slurm-wlm munge)"
    return None


def vendor_dir() -> Path | None:
    """The vendored third-party sources (pyxis, enroot): $SNRUN_MC_VENDOR, else
    ../shared/vendor beside the repository (as CI has it), else those contrib/minicluster/
    vendor-source fetched into $SNRUN_MC_CACHE/src; None where none has them."""
    given = os.environ.get("SNRUN_MC_VENDOR")
    path = Path(given) if given else MINICLUSTER.parents[2].parent / "shared" / "vendor"
    cache = Path(os.environ.get("SNRUN_MC_CACHE", "/var/cache/snrun-minicluster")) / "src"
    for folder in (path, cache):
        if all((folder / f).is_file() for f in ("pyxis-0.24.0.tar.gz", "enroot-4.1.2.tar.gz")):
            return folder
    return None


def pyxis_missing(namespaced: bool = False) -> str | None:
    """Why pyxis + enroot cannot be set up here (None: it can). A namespaced root brings its
    own Slurm headers (minicluster adds them); the host's are needed for the host's Slurm."""
    if vendor_dir() is None:
        return (
            "no vendored pyxis/enroot sources (../shared/vendor, $SNRUN_MC_VENDOR; "
            "contrib/minicluster/vendor-source pyxis-0.24.0.tar.gz fetches them)"
        )
    need = {"mksquashfs": "squashfs-tools", "squashfuse": "squashfuse", "makeself": "makeself"}
    for cmd, pkg in need.items():
        if shutil.which(cmd) is None:
            return f"{cmd} is not installed (apt-get install {pkg}; make install does)"
    for path, pkg in (("/usr/include/slurm/spank.h", "libslurm-dev"), ("/dev/fuse", None)):
        if namespaced and pkg == "libslurm-dev":
            continue
        if not Path(path).exists():
            return f"{path} is missing" + (f" (apt-get install {pkg})" if pkg else "")
    return None


def container_runtimes() -> list[str]:
    """Container runtimes the test session boots the cluster with, where they can run: Slurm
    OCI (runc: the host's, or the one minicluster adds to a namespaced root), pyxis + enroot
    where the vendored sources and build tools are, Apptainer in the namespaced roots only
    (Debian's needs glibc >= 2.38: not the host's 22.05, nor 25.11, a prefix build on the
    host). They only act on steps that ask for a container (test_containers.py)."""
    namespaced = wanted_slurm() in NAMESPACED_SLURM
    runtimes = []
    if namespaced or shutil.which("runc"):
        runtimes.append("oci")
    if pyxis_missing(namespaced) is None:
        runtimes.append("pyxis")
    if namespaced:  # Debian's Apptainer needs glibc >= 2.38: only the roots can have it
        runtimes.append("apptainer")
    return runtimes


def _container_args() -> list[str]:
    runtimes = container_runtimes()
    return ["--containers=" + ",".join(runtimes)] if runtimes else []


def _minicluster(*args: str) -> subprocess.CompletedProcess[str]:
    # `up` of 24.11/26.05 builds its Debian root the first time (1-3 min); 25.11 builds Slurm
    # and pyslurm from source (~10 min on 2 quiet cores, 35 min seen under load).
    timeout = 2400 if args[0] == "up" else 120
    return subprocess.run(
        ["bash", str(MINICLUSTER), *args], capture_output=True, text=True, timeout=timeout
    )


_BACKEND = "SNRUN_SLURM_BACKEND"


def _use_pyslurm(path: str) -> None:
    """pyslurm (built against the cluster's Slurm) importable here and in subprocesses, and
    required: a backend that skips itself fails the queries instead of hiding behind the CLI."""
    import sys

    if path not in sys.path:
        sys.path.insert(0, path)
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = path + (os.pathsep + old if old else "")
    os.environ[_BACKEND] = "pyslurm"


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """Boot (or reuse) the minicluster; sets SLURM_CONF for the whole session."""
    if os.environ.get("SNRUN_SKIP_SLURM") == "1":
        pytest.skip("SNRUN_SKIP_SLURM=1: real-cluster tests skipped")
    why = _why_not_available()
    if why:
        pytest.fail(f"{why} (or set SNRUN_SKIP_SLURM=1 to skip tests marked slurm)", pytrace=False)
    which = ["--slurm", wanted_slurm()]
    booted = _minicluster("status", *which).returncode != 0
    if booted:
        up = _minicluster("up", *which, "--topology", wanted_topology(), *_container_args())
        if up.returncode != 0:
            why = up.stderr.strip() or up.stdout.strip()
            pytest.fail(f"minicluster up failed: {why}", pytrace=False)
    env = _cluster_env()
    sdir = Path(env["SNRUN_MC_DIR"])
    conf = Path(env["SLURM_CONF"])
    namespaced = env.get("NAMESPACED") == "1"
    old = {k: os.environ.get(k) for k in ("SLURM_CONF", "PATH", "PYTHONPATH", _BACKEND)}
    os.environ["SLURM_CONF"] = str(conf)
    if namespaced or env.get("SLURM_PREFIX"):
        os.environ["PATH"] = env["CLIENTS"] + os.pathsep + os.environ.get("PATH", "")
    if env.get("PYSLURM_PATH"):  # this process and the snrun processes it starts
        _use_pyslurm(env["PYSLURM_PATH"])
    try:
        from slurm_supernode.slurm.nodes import node_infos
        from slurm_supernode.slurm.version import slurm_version

        infos = node_infos()
        version = slurm_version()
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
            slurm=wanted_slurm(),
            topology_option=wanted_topology(),
            version=(version.major, version.minor),
            topology=_running_topology(),
            namespaced=namespaced,
            slurm_prefix=Path(env["SLURM_PREFIX"]) if env.get("SLURM_PREFIX") else None,
        )
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if booted:
            _minicluster("down", *which)


@pytest.fixture(autouse=True)
def _slurm_marked(request: pytest.FixtureRequest) -> None:
    """Tests marked `slurm` get the cluster even if they do not ask for the fixture."""
    if request.node.get_closest_marker("slurm") is not None:
        request.getfixturevalue("slurm_cluster")
