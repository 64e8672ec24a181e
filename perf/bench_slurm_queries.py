"""Issue 31: the Slurm layer's frequent queries through pyslurm and through the command line.

On the running cluster (SLURM_CONF set; for 25.11 pyslurm on PYTHONPATH, as the cluster's
env.sh does), with a few jobs queued: per call, the median and 90th percentile of
- one job's record (`controller_jobs(ID)`, what `job_info` and the `--wait` watcher poll),
- all jobs at once (`controller_jobs()`, what a schedule's lookup reads),
- nodes, partitions,
each through `SNRUN_SLURM_BACKEND=pyslurm` and `=cli` (interleaved, so load drift hits both);
then the first query of a process (probe: `sinfo --version` + `import pyslurm`), and end to end
`snrun --dry-run` (a process that asks the running Slurm its version, nodes and partitions)
and `snrun status` (reads the job's ledger only: no Slurm query, so no backend difference).
Where pyslurm does not serve this Slurm only the command line is measured, and the reason is
printed. Asserts nothing.

    python3 perf/bench_slurm_queries.py [--runs N] [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from slurm_supernode.slurm import job_lookup, jobs, nodes, pyslurm_probe  # noqa: E402

BACKEND = "SNRUN_SLURM_BACKEND"


def through(backend: str, query: Callable[[], object]) -> float:
    os.environ[BACKEND] = backend
    t0 = time.perf_counter()
    query()
    return time.perf_counter() - t0


def row(what: str, times: dict[str, list[float]]) -> None:
    cells = []
    for backend, xs in times.items():
        xs = sorted(xs)
        p90 = xs[min(len(xs) - 1, int(0.9 * len(xs)))]
        cells.append(f"{backend} {statistics.median(xs) * 1e3:6.1f} ms (p90 {p90 * 1e3:6.1f})")
    ratio = ""
    if len(times) == 2:
        a, b = (statistics.median(xs) for xs in times.values())
        ratio = f"  x{b / a:.1f}" if a else ""
    print(f"  {what:<28} " + "   ".join(cells) + ratio)


def process_times(argv: list[str], env: dict[str, str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(
            argv, env=env, capture_output=True, text=True, check=False, cwd=tempfile.gettempdir()
        )
        out.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv[2:])} failed: {proc.stderr.strip()[-400:]}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=20, help="held jobs queued while measuring")
    args = ap.parse_args()
    os.environ[BACKEND] = "auto"
    found = pyslurm_probe.probe(dict(os.environ))
    backends = ["pyslurm", "cli"] if found.api is not None else ["cli"]
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"# {time.strftime('%F %T UTC', time.gmtime())}, {os.cpu_count()} CPUs, load {load}")
    print(
        f"# pyslurm: {found.version or 'not installed'}"
        + (f" (skipped: {found.why_not})" if found.api is None else " (serves this Slurm)")
    )
    held = [
        jobs.submit("#!/bin/bash\ntrue\n", ["--hold", "-J", f"bench-q{i}", "-o", "/dev/null"])
        for i in range(args.jobs)
    ]
    try:
        job = held[0]
        queries: list[tuple[str, Callable[[], object]]] = [
            ("job record", lambda: job_lookup.controller_jobs(job)),
            (f"all jobs ({len(held)}+ queued)", lambda: job_lookup.controller_jobs()),
            ("nodes", lambda: nodes.node_infos()),
            ("partitions", lambda: nodes.partition_infos()),
        ]
        for backend in backends:  # warm: the probe, the import, the page cache
            for _, q in queries:
                through(backend, q)
        for what, q in queries:
            times: dict[str, list[float]] = {b: [] for b in backends}
            for _ in range(args.runs):
                for b in backends:
                    times[b].append(through(b, q))
            row(what, times)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
        )
        first = (
            "import time; t=time.perf_counter();"
            f"from slurm_supernode.slurm import job_lookup; job_lookup.controller_jobs({job});"
            "print(time.perf_counter()-t)"
        )
        times = {b: [] for b in backends}
        for _ in range(max(3, args.runs // 10)):
            for b in backends:
                out = subprocess.run(
                    [sys.executable, "-c", first],
                    env=env | {BACKEND: b},
                    capture_output=True,
                    text=True,
                    check=True,
                )
                times[b].append(float(out.stdout.strip()))
        row("first query of a process", times)
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "train.py"
            script.write_text("print('hi')\n")
            dry = [
                sys.executable,
                "-m",
                "slurm_supernode",
                "--site",
                "local",
                "-N",
                "2",
                "--jobs-dir",
                tmp,
                "--dry-run",
                str(script),
            ]
            times = {b: [] for b in backends}
            for _ in range(max(3, args.runs // 10)):
                for b in backends:
                    times[b] += process_times(dry, env | {BACKEND: b}, 1)
            row("snrun --dry-run (end to end)", times)
            # a real snrun job chain (its job dir and ledger) for `snrun status` to read
            sub = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "slurm_supernode",
                    "--site",
                    "local",
                    "-N",
                    "1",
                    "--jobs-dir",
                    tmp,
                    "--parsable",
                    str(script),
                ],
                env=env,
                capture_output=True,
                text=True,
                check=True,
                cwd=tmp,
            )
            chain = int(sub.stdout.strip().splitlines()[-1])
            held.append(chain)
            status = [
                sys.executable,
                "-m",
                "slurm_supernode",
                "status",
                "--jobs-dir",
                tmp,
                str(chain),
            ]
            times = {b: [] for b in backends}
            for _ in range(max(3, args.runs // 10)):
                for b in backends:
                    times[b] += process_times(status, env | {BACKEND: b}, 1)
            row("snrun status (end to end)", times)
    finally:
        os.environ[BACKEND] = "cli"
        for j in held:
            jobs.cancel(j)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"# done, load {load}")


if __name__ == "__main__":
    main()
