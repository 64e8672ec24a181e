"""How long `minicluster up` takes to boot a test cluster from built roots (the figures the
minicluster README quotes), per Slurm version, without and with slurmdbd accounting; and
`down`; with `--scale`, the rack-scale shape of `make test-scale` (8 super nodes x 18 trays,
144 slurmd) and the daemons' resident memory. A cluster that is already up is left alone (its
boot is not measured). Prints figures, asserts nothing; the machine and its load go beside
them (perf/run_all.sh's stamp)."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MC = ["bash", str(ROOT / "contrib" / "minicluster" / "minicluster")]
# topology per version, as make test / make bench boot them; accounting where the root has it
TOPOLOGY = {"host": "tree", "22.05": "tree", "24.11": "block", "25.11": "block", "26.05": "yaml"}
ACCOUNTING = {"24.11", "26.05"}
# make test-scale's shape (Makefile SCALE_SHAPE)
SCALE = {
    "SNRUN_MC_SUPERNODES": "8",
    "SNRUN_MC_NODES_PER_SUPERNODE": "18",
    "SNRUN_MC_SPARES": "2",
    "SNRUN_MC_GPUS": "4",
    "SNRUN_MC_JOB_SUBMIT_LUA": "1",
    "SNRUN_MC_TIMEOUT": "120",
}
DAEMONS = ("slurmctld", "slurmd", "slurmdbd", "munged", "mariadbd")


def daemons_rss_mb() -> float:
    """Resident memory of every Slurm, munge and MariaDB daemon on this machine (the clusters'
    namespaces are children of this PID namespace, so their processes are listed here)."""
    out = subprocess.run(
        ["ps", "-C", ",".join(DAEMONS), "-o", "rss="], capture_output=True, text=True
    ).stdout
    return sum(int(kb) for kb in out.split()) / 1024


def minicluster(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MC, *args], capture_output=True, text=True, check=False, env=env)


def timed_boot(version: str, accounting: bool, scale: bool) -> tuple[float, float, float]:
    """Seconds for `up`, then for `down`; the daemons' resident MB while it was up."""
    env = os.environ | SCALE if scale else None
    args = ["--slurm", version, "--topology", TOPOLOGY[version]]
    args += ["--accounting"] if accounting else ["--no-accounting"]
    t0 = time.perf_counter()
    up = minicluster("up", *args, env=env)
    booted = time.perf_counter() - t0
    rss = daemons_rss_mb()
    if up.returncode != 0:
        minicluster("down", "--slurm", version)
        raise SystemExit(f"bench_boot: minicluster up {' '.join(args)} failed: {up.stderr.strip()}")
    t0 = time.perf_counter()
    minicluster("down", "--slurm", version)
    return booted, time.perf_counter() - t0, rss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--slurm", action="append", help="host, 24.11, 25.11, 26.05 (repeatable)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scale", action="store_true", help="8 super nodes x 18 trays (144 slurmd)")
    ns = ap.parse_args()
    for version in ns.slurm or ["host"]:
        if minicluster("status", "--slurm", version).returncode == 0:
            print(f"{version:>6}: already up, not measured (make cluster-down SLURM={version})")
            continue
        with_accounting = version in ACCOUNTING and not ns.scale
        for accounting in [False, True] if with_accounting else [False]:
            runs = [timed_boot(version, accounting, ns.scale) for _ in range(ns.repeat)]
            ups = [u for u, _, _ in runs]
            downs = [d for _, d, _ in runs]
            label = f"{version}/{TOPOLOGY[version]}" + (", accounting" if accounting else "")
            label += ", 144 nodes" if ns.scale else ""
            print(
                f"{label:<36} up: median {statistics.median(ups):5.1f} s "
                f"(min {min(ups):.1f}, max {max(ups):.1f}, {ns.repeat} boots)   "
                f"down: median {statistics.median(downs):4.1f} s   "
                f"daemons' RSS {statistics.median(r for _, _, r in runs):6.0f} MB   "
                f"load {os.getloadavg()[0]:.1f}"
            )


if __name__ == "__main__":
    main()
