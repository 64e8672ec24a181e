"""What Slurm does with a plain ``--requeue`` and with ``--requeue=expedite``, measured.

docs/resubmission.md's table of expedited requeues (Slurm 25.11+ with
``SlurmctldParameters=enable_expedited_requeue``) comes from this run. Plain batch jobs of 4
nodes (one super node of the local cluster), no snrun: it measures Slurm itself, event by event:

  requeue        the batch script runs ``scontrol requeue`` on its own job: -> its rerun starts
  node down      ``scontrol update NodeName=<a node of the job> State=DOWN`` (Slurm's own
                 requeue of a job that lost a node): -> the rerun starts (and where)
  hold, release  the script runs ``scontrol requeuehold``; once the job is pending and held,
                 ``scontrol release``: release -> the rerun starts
  exit 1         the batch script exits 1: the state the job settles in
  exit 0         the batch script exits 0: the state the job settles in

The times are from the batch script's own clock (``date +%s.%N`` written to a file) and the
benchmark's, both on this machine. Needs a running cluster (``SLURM_CONF``, the clients on
PATH: perf/run_all.sh sets them); ``--requeue=expedite`` rows only where the cluster allows it.

    python3 perf/bench_expedite.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = os.environ | {"PYTHONPATH": str(ROOT)}
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}


def sh(*cmd: str) -> str:
    proc = subprocess.run(cmd, env=ENV, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"bench_expedite: {' '.join(cmd)}: {proc.stderr.strip()}")
    return proc.stdout


def job_fields(job: str) -> dict[str, str]:
    """``scontrol show job -o``'s fields (JobState, Reason, NodeList, Priority, ...)."""
    out = subprocess.run(
        ["scontrol", "show", "job", "-o", job], env=ENV, capture_output=True, text=True
    ).stdout
    return dict(w.split("=", 1) for w in out.split() if "=" in w)


def wait_for(what: str, check: Callable[[], object], timeout: float = 120) -> object:
    """Poll ``check`` every 0.05 s until it returns something true; that value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise SystemExit(f"bench_expedite: timed out waiting for {what}")


def stamp_file(path: Path) -> float | None:
    try:
        return float(path.read_text())
    except (OSError, ValueError):
        return None


class Scenario:
    """One batch job; ``first``: what its first run does after stamping ``start0``."""

    def __init__(self, tmp: Path, requeue: str, first: str) -> None:
        self.tmp = tmp
        for old in tmp.glob("start*"):
            old.unlink()
        script = tmp / "job.sh"
        script.write_text(
            "#!/bin/bash\n"
            f'date +%s.%N > {tmp}/start"${{SLURM_RESTART_COUNT:-0}}"\n'
            'if [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then\n'
            f"{first}\n"
            "fi\n"
        )
        self.job = sh(
            "sbatch", "--parsable", "-N4", "--exclusive", "--constraint=[sn0|sn1]",
            requeue, "-o", "/dev/null", str(script),
        ).strip()  # fmt: skip

    def started(self, run: int) -> float:
        return float(wait_for(f"run {run} of job {self.job}", lambda: stamp_file(self.start(run))))  # type: ignore[arg-type]

    def start(self, run: int) -> Path:
        return self.tmp / f"start{run}"

    def settled(self) -> str:
        """The state the job rests in: a final one, or pending and held (REQUEUE_HOLD)."""

        def rest() -> str | None:
            f = job_fields(self.job)
            state, prio = f.get("JobState", ""), f.get("Priority")
            if state in FINAL:
                return state
            if "HOLD" in state or (state == "PENDING" and prio == "0"):
                return f"{state} ({f.get('Reason', '')}, priority {prio})"
            return None

        return str(wait_for(f"job {self.job} to settle", rest))

    def cancel(self) -> None:
        subprocess.run(["scancel", self.job], env=ENV, capture_output=True)
        wait_for(f"job {self.job} to end", lambda: job_fields(self.job).get("JobState") in FINAL)


def requeue_self(tmp: Path, requeue: str) -> str:
    s = Scenario(tmp, requeue, "  scontrol requeue $SLURM_JOB_ID; sleep 600")
    try:
        return f"{s.started(1) - s.started(0):.1f} s"
    finally:
        s.cancel()


def node_down(tmp: Path, requeue: str) -> str:
    s = Scenario(tmp, requeue, "  sleep 600")
    s.started(0)
    first = job_fields(s.job)["NodeList"]
    from slurm_supernode.hostlist import expand

    victim = expand(first)[-1]
    at = time.time()
    sh("scontrol", "update", f"NodeName={victim}", "State=DOWN", "Reason=bench_expedite")
    try:
        rerun = s.started(1) - at
        return f"{rerun:.1f} s ({first} -> {job_fields(s.job).get('NodeList')})"
    finally:
        s.cancel()
        # the minicluster's ReturnToService=2 may bring it back by itself
        rest = str(wait_for(f"{victim} at rest", lambda: node_state(victim) in ("down", "idle")))
        if rest == "down":
            sh("scontrol", "update", f"NodeName={victim}", "State=RESUME")
        wait_for(f"{victim} back", lambda: node_state(victim) == "idle")


def node_state(node: str) -> str:
    return sh("sinfo", "-h", "-n", node, "-o", "%T").strip()


def hold_release(tmp: Path, requeue: str) -> str:
    s = Scenario(tmp, requeue, "  scontrol requeuehold $SLURM_JOB_ID; sleep 600")
    s.started(0)
    try:
        wait_for(
            "the held job",
            lambda: (
                (f := job_fields(s.job)).get("JobState") == "PENDING" and f.get("Priority") == "0"
            ),
        )
        at = time.time()
        sh("scontrol", "release", s.job)
        return f"{s.started(1) - at:.1f} s"
    finally:
        s.cancel()


def exits(code: int) -> Callable[[Path, str], str]:
    def run(tmp: Path, requeue: str) -> str:
        s = Scenario(tmp, requeue, f"  exit {code}")
        try:
            return s.settled()
        finally:
            s.cancel()

    return run


ROWS: list[tuple[str, Callable[[Path, str], str]]] = [
    ("scontrol requeue -> rerun starts", requeue_self),
    ("a node set DOWN -> rerun starts", node_down),
    ("requeuehold; release -> rerun starts", hold_release),
    ("the batch script exits 1 -> state", exits(1)),
    ("the batch script exits 0 -> state", exits(0)),
]


def median_of(values: list[str]) -> str:
    """``1.2 s (1.1-1.4)`` over timed results; other results joined when they differ."""
    secs = [float(v.split()[0]) for v in values if v.split()[0].replace(".", "", 1).isdigit()]
    if len(secs) == len(values) and len(values) > 1:
        extra = values[0].split(" s", 1)[1]
        return f"{statistics.median(secs):.1f} s ({min(secs):.1f}-{max(secs):.1f}){extra}"
    return " / ".join(dict.fromkeys(values))


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--repeat", type=int, default=3)
    repeat = ap.parse_args().repeat
    from slurm_supernode.slurm.version import detect_features

    ways = ["--requeue"] + (["--requeue=expedite"] if detect_features().expedited_requeue else [])
    conf = Path(os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf")).read_text()
    cred = next(
        (
            ln.strip()
            for ln in conf.splitlines()
            if "cred_expire" in ln and "=" in ln and ln[:1] != "#"
        ),
        "cred_expire default",
    )
    print(
        f"# bench_expedite on {platform.node()}: {os.cpu_count()} CPUs;"
        f" {sh('sinfo', '--version').strip()}; {cred}; load average"
        f" {' '.join(f'{x:.2f}' for x in os.getloadavg())}; median (min-max) of {repeat}"
    )
    if len(ways) == 1:
        print("# --requeue=expedite not allowed on this cluster: plain --requeue only")
    print(f"{'event':38}" + "".join(f" | {w:34}" for w in ways))
    with tempfile.TemporaryDirectory(dir=os.environ.get("SNRUN_BENCH_TMP")) as t:
        tmp = Path(t)
        tmp.chmod(0o777)
        for label, row in ROWS:
            cells = [median_of([row(tmp, w) for _ in range(repeat)]) for w in ways]
            print(f"{label:38}" + "".join(f" | {c:34}" for c in cells), flush=True)
    print(f"# after: load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
