"""What `snrun metrics JOB --html` costs on a long attempt (docs/benchmarks.md, "Watching a job"):
a job directory of RANKS ranks (4 a node) x STEPS step records and a device sample of each of
4 devices every 10 steps is written, then the report is built in a child process, and its
wall time, CPU time and peak memory (ru_maxrss) printed. The report reads every file a line at a
time into equal time slices (observe/over_time.py), so memory should stay flat as STEPS grows.
Prints figures, asserts nothing; the load from /proc/loadavg beside them.

    python3 perf/bench_report.py [--ranks 16] [--steps 20000 50000]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from slurm_supernode.chain import ledger  # noqa: E402
from slurm_supernode.observe.records import (  # noqa: E402
    DeviceSample,
    StepRecord,
    attempt_dir,
    record_line,
)

T0 = 1_780_000_000.0


def write_job(job: Path, ranks: int, steps: int) -> int:
    """The job directory; returns the bytes of records written."""
    job.mkdir(parents=True)
    (job / "plan.json").write_text("{}")
    nodes = max(ranks // 4, 1)
    ledger.append(job, "attempt_start", attempt=0, job_id=4242, nodes=f"n[0-{nodes - 1}]")
    folder = attempt_dir(job, 0)
    folder.mkdir(parents=True)
    for r in range(ranks):
        with open(folder / f"rank-{r}.steps.jsonl", "w") as fh:
            fh.writelines(
                record_line(
                    StepRecord(
                        t=T0 + s,
                        rank=r,
                        node=f"n{r // 4}",
                        step=s,
                        seconds=1.0 + (s % 7) / 100,
                        busy_s=0.9,
                    )
                )
                for s in range(1, steps + 1)
            )
    for n in range(nodes):
        with open(folder / f"n{n}.samples.jsonl", "w") as fh:
            fh.writelines(
                record_line(
                    DeviceSample(
                        t=T0 + 10 * i, node=f"n{n}", index=d, util_percent=90.0, power_w=500.0
                    )
                )
                for i in range(steps // 10)
                for d in range(4)
            )
    return sum(p.stat().st_size for p in folder.iterdir())


def report(job: Path, out: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak MiB) of one `snrun metrics JOB --html OUT` in a fresh child."""
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "slurm_supernode", "metrics", str(job), "--html",
                    str(out)], env=env, check=True, capture_output=True)  # fmt: skip
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, after.ru_maxrss / 1024  # the largest child so far: run sizes upwards


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--steps", type=int, nargs="+", default=[20_000, 50_000])
    args = ap.parse_args()
    load = lambda: Path("/proc/loadavg").read_text().split()[:3]  # noqa: E731
    print(f"# {time.strftime('%F %T UTC', time.gmtime())}, {os.cpu_count()} CPUs, "
          f"loadavg {' '.join(load())}")  # fmt: skip
    for steps in sorted(args.steps):
        with tempfile.TemporaryDirectory() as tmp:
            size = write_job(Path(tmp, "job"), args.ranks, steps)
            wall, cpu, rss = report(Path(tmp, "job"), Path(tmp, "report.html"))
            records = args.ranks * steps
            print(f"{args.ranks} ranks x {steps} steps ({records:,} step records, "
                  f"{size / 2**20:.0f} MiB): report {wall:.1f} s wall, {cpu:.1f} s CPU "
                  f"({cpu / records * 1e6:.1f} us a record), peak {rss:.0f} MiB")  # fmt: skip
    print(f"# after: loadavg {' '.join(load())}")


if __name__ == "__main__":
    main()
