"""How often does a clean `snrun doctor` say FAIL on a busy host? (issue 42, item 6)

Runs the whole doctor (a job on every super node of the site, gloo, no fault injected) N times
on a running cluster while B CPU burners load the machine, and prints per run the verdict and
every failing finding, then the false-FAIL rate. Each run's facts file is kept, so a changed
rule can be judged again on the very same measurements (`--rejudge DIR`: no cluster needed).

    SLURM_CONF=... python3 perf/bench_doctor_noise.py --site SITE [--runs 3] [--burners 4]
    python3 perf/bench_doctor_noise.py --site SITE --rejudge perf/results/doctor-noise/facts

A figure, not a test: the machine is shared; report the load it ran at.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BURN = "import time\nend = time.time() + {s}\nwhile time.time() < end: pass\n"


def burners(count: int, seconds: float) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", BURN.format(s=seconds)]) for _ in range(count)]


def failing(report: dict) -> list[str]:
    return [
        f"{s['step']}/{f['check']}: {f['measured'][:110]}"
        for s in report["steps"]
        for f in s["findings"]
        if f["verdict"] == "fail"
    ]


def doctor(site: str, jobs: Path, extra: list[str]) -> tuple[dict, Path | None]:
    env = os.environ | {"PYTHONPATH": str(ROOT), "SNRUN_JOBS_DIR": str(jobs)}
    argv = [sys.executable, "-m", "slurm_supernode", "doctor", "--site", site, "--backend",
            "gloo", "--nproc-per-node", "2", "--iters", "3", "-t", "00:10:00", "--json",
            *extra]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
    if not proc.stdout.strip().startswith("{"):
        raise SystemExit(f"doctor exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    report = json.loads(proc.stdout)
    facts = sorted(jobs.glob("by-id/*/doctor-facts.json"), key=lambda p: p.stat().st_mtime)
    return report, (facts[-1] if facts else None)


def rejudge(site: str, folder: Path) -> int:
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    fails = 0
    files = sorted(folder.glob("*.json"))
    for path in files:
        proc = subprocess.run([sys.executable, "-m", "slurm_supernode", "doctor", "--site", site,
                               "--facts", str(path), "--json"], capture_output=True, text=True,
                              env=env, timeout=300)  # fmt: skip
        report = json.loads(proc.stdout)
        bad = failing(report)
        fails += bool(bad)
        print(f"{path.name}: {report['verdict']}" + "".join(f"\n    {b}" for b in bad))
    print(f"# {fails} of {len(files)} clean runs judged FAIL")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", required=True, help="the cluster's site (name or file)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--burners", type=int, default=4, help="CPU burner processes during runs")
    ap.add_argument("--keep", type=Path, help="copy each run's facts file here")
    ap.add_argument("--rejudge", type=Path, help="judge the facts files of this folder again")
    ns = ap.parse_args()
    if ns.rejudge:
        return rejudge(ns.site, ns.rejudge)
    load0 = os.getloadavg()
    fails = 0
    with tempfile.TemporaryDirectory(prefix="doctor-noise-") as tmp:
        for i in range(ns.runs):
            procs = burners(ns.burners, 1800)
            t0 = time.monotonic()
            try:
                report, facts = doctor(ns.site, Path(tmp) / "jobs", [])
            finally:
                for p in procs:
                    p.kill()
                    p.wait()
            bad = failing(report)
            fails += bool(bad)
            load = os.getloadavg()[0]
            print(f"run {i + 1}: {report['verdict']} in {time.monotonic() - t0:.0f} s, "
                  f"load {load:.1f}" + "".join(f"\n    {b}" for b in bad), flush=True)  # fmt: skip
            if ns.keep and facts:
                ns.keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(facts, ns.keep / f"run{i + 1}-{int(time.time())}.json")
    print(
        f"# {fails} of {ns.runs} clean doctor runs FAIL with {ns.burners} CPU burners "
        f"({os.cpu_count()} CPUs; load before {load0[0]:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
