"""Issue 24 benchmark on the local cluster: a job's start inside each container runtime
against bare metal.

For bare metal and every runtime the running cluster offers (detected as snrun does:
slurm.container_runtimes), ``--repeat`` one-node jobs of one rank: attempt 0 exits at once
with an error, attempt 1 (the restart in the same allocation) succeeds. The rank imports
nothing: it writes the time it started. Seconds, median over the repeats:

  enter   the agent wrote the node's enter script -> the container ran its first command
          (the ``.started`` file the enter script creates): the runtime's own start (pyxis:
          mount or unpack of the squashfs; OCI: runc; Apptainer: the SIF); none bare
  start   the attempt starts (``attempt_start`` in the ledger) -> the rank's first line: what
          a user waits for (torchrun's own start, the same everywhere, included)
  cold: attempt 0 (the first step of the allocation); warm: attempt 1 (the restart).
  ``pyxis+name`` is pyxis with ``--container-name``: the restart reuses the container's
  file system (enroot unpacks the image once), where plain pyxis mounts it again.

Needs a running minicluster booted with ``--containers`` (``minicluster up --slurm 24.11
--containers=oci,pyxis,apptainer``, SLURM_CONF and for a namespaced one its clients on PATH)
and builds the test image once (contrib/minicluster/build-image).

    python3 perf/bench_containers.py [--repeat 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ENV = os.environ | {"PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
IMAGE = Path(os.environ.get("SNRUN_MC_CACHE", "/var/cache/snrun-minicluster"), "images", "oci-test")
RANK = """\
import os, sys, time
t = time.time()
a = int(os.environ["SNRUN_ATTEMPT"])
path = os.path.join(os.environ["SNRUN_JOB_DIR"], f"first.a{a}")
with open(path + ".tmp", "w") as fh:
    fh.write(repr(t))
os.replace(path + ".tmp", path)
sys.exit(3 if a == 0 else 0)
"""


def build_image(runtimes: set[str]) -> None:
    extra = ["--squashfs"] + (["--sif"] if "apptainer" in runtimes else [])
    script = ROOT / "contrib" / "minicluster" / "build-image"
    subprocess.run(["bash", str(script), str(IMAGE), *extra], check=True, timeout=900)


def site_file(tmp: Path, runtime: str | None) -> Path:
    """local.yaml, with the runtime and the host's python mounted read-only at its path."""
    text = (ROOT / "site-configs" / "local.yaml").read_text()
    if runtime:
        prefix = Path(sys.prefix).resolve()
        text += (
            f"containers:\n  runtime: {runtime}\n  python: {Path(sys.executable).resolve()}\n"
            f"  mounts: ['{prefix}:{prefix}:ro']\n"
        )
        if runtime == "apptainer":  # root lacks CAP_SYS_RESOURCE in this VM
            text += "  options: [--userns]\n"
    path = tmp / f"site-{runtime or 'bare'}.yaml"
    path.write_text(text)
    return path


def ledger(job_dir: Path) -> list[dict]:
    p = job_dir / "ledger.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines() if x.strip()] if p.exists() else []


def run_job(tmp: Path, row: str) -> dict[str, float | None]:
    """One job; the row's figures of attempts 0 (cold) and 1 (warm)."""
    runtime = row.split("+")[0] if row != "bare" else None
    args = ["--site", str(site_file(tmp, runtime)), "--jobs-dir", str(tmp / "jobs")]
    args += ["-N", "1", "--allow-partial", "--nproc-per-node", "1", "--max-restarts", "1"]
    if runtime:
        image = {"oci": IMAGE, "pyxis": IMAGE.with_suffix(".sqsh")}.get(runtime)
        args += ["--container-image", str(image or IMAGE.with_suffix(".sif"))]
    if row == "pyxis+name":  # pyxis' names outlive their job: a new one per job (cold start)
        args += ["--container-name", f"bench{os.getpid()}-{time.monotonic_ns()}"]
    script = tmp / "rank.py"
    script.write_text(RANK)
    out = subprocess.run(
        [sys.executable, "-m", "slurm_supernode", *args, "--parsable", "-t", "5", str(script)],
        env=ENV, check=True, capture_output=True, text=True,
    )  # fmt: skip
    job_id = out.stdout.strip().splitlines()[-1]
    job_dir = (tmp / "jobs" / "by-id" / job_id).resolve()
    deadline = time.monotonic() + 300
    while not any(r["event"] == "final" for r in ledger(job_dir)):
        if time.monotonic() > deadline:
            raise SystemExit(f"{row}: job {job_id} did not end in 300 s ({job_dir})")
        time.sleep(0.5)
    starts = {r["attempt"]: r["time"] for r in ledger(job_dir) if r["event"] == "attempt_start"}
    figures: dict[str, float | None] = {}
    for attempt, label in ((0, "cold"), (1, "warm")):
        first = job_dir / f"first.a{attempt}"
        if not first.exists() or attempt not in starts:
            raise SystemExit(f"{row}: attempt {attempt} did not run its rank ({job_dir})")
        figures[f"start_{label}"] = float(first.read_text()) - starts[attempt]
        enter = job_dir / "container" / f"n0.{attempt}.enter.sh"
        began = enter.with_name(f"n0.{attempt}.started")
        entered = began.stat().st_mtime - enter.stat().st_mtime if began.exists() else None
        figures[f"enter_{label}"] = entered
    return figures


def main() -> None:
    from slurm_supernode.slurm.container_runtimes import detect_container_runtimes

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="write the raw figures here")
    ns = ap.parse_args()
    found = detect_container_runtimes()
    rows = ["bare", *(r for r in ("oci", "pyxis", "apptainer") if r in found.found)]
    if "pyxis" in rows:
        rows.append("pyxis+name")
    for name, why in found.missing.items():
        print(f"# {name}: not on this cluster ({why})")
    build_image(set(rows))
    raw: dict[str, list[dict[str, float | None]]] = {r: [] for r in rows}
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        for _ in range(ns.repeat):
            for row in rows:  # interleaved: drift of the machine's load hits every row alike
                raw[row].append(run_job(Path(tmp), row))
    print(f"{'runtime':<11} {'enter cold':>10} {'enter warm':>10} {'start cold':>10} "
          f"{'start warm':>10}   (s, median of {ns.repeat})")  # fmt: skip
    for row in rows:
        cells = []
        for key in ("enter_cold", "enter_warm", "start_cold", "start_warm"):
            values = [f[key] for f in raw[row] if f[key] is not None]
            cells.append(f"{statistics.median(values):10.2f}" if values else f"{'-':>10}")
        print(f"{row:<11} {' '.join(cells)}")
    if ns.json:
        Path(ns.json).write_text(json.dumps(raw, indent=2) + "\n")


if __name__ == "__main__":
    main()
