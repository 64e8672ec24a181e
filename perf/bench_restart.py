"""Issue 6 benchmark on the local cluster: from a crash to the next attempt running.

  in-allocation restart     a rank exits 1; the supervisor restarts the step (target <= 10 s),
                            with --no-fork-workers (spawned workers) and by default (forked)
  requeue, node excluded    a rank exits 1 while a node of the job is drained; the job requeues
                            itself without that node and a detached releaser starts it at once
                            (target <= 30 s)
  lost node                 a node of the job is lost (its slurmd killed, its tasks frozen):
                            Slurm notices after SlurmdTimeout (20 s here), the job requeues
                            without it; from the loss to the next attempt running
  plain --requeue           Slurm's own path: the job runs `scontrol requeue` on itself and
                            waits out cred_expire (10 s on the local cluster, 120 s by default)
  --requeue=expedite        the same with expedite, where the cluster allows it (Slurm 25.11+
                            with SlurmctldParameters=enable_expedited_requeue; snrun's own jobs
                            then use it too: the requeue and lost-node lines say which path ran)

Any minicluster version: SNRUN_MC_SLURM (host, 24.11, 26.05; `perf/run_all.sh` sets it) says
which, so processes of a namespaced cluster are signalled inside (`minicluster exec`).

"Running" = the training script's first heartbeat of the next attempt. Needs `make cluster-up`.

    python3 perf/bench_restart.py [--only in-allocation,requeue,lost-node,plain,expedite]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN = str(ROOT / "contrib" / "examples" / "train_resumable.py")
MINICLUSTER = ROOT / "contrib" / "minicluster" / "minicluster"
ENV = os.environ | {
    "PYTHONPATH": str(ROOT),
    "SLURM_CONF": os.environ.get("SLURM_CONF", "/tmp/snrun-minicluster/etc/slurm.conf"),
}


def sh(*cmd: str) -> str:
    return subprocess.run(cmd, env=ENV, check=True, capture_output=True, text=True).stdout


def submit(jobs: Path, *args: str) -> Path:
    out = sh(
        sys.executable,
        "-m",
        "slurm_supernode",
        "--site",
        "local",
        "--jobs-dir",
        str(jobs),
        "--parsable",
        "-S",
        "1",
        "--nproc-per-node",
        "1",
        *args,
    )
    return (jobs / "by-id" / out.strip()).resolve()


def ledger(job_dir: Path) -> list[dict]:
    p = job_dir / "ledger.jsonl"
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


def job_state(job_dir: Path) -> str:
    """What Slurm says about the chain's jobs now (for a scenario that gave up)."""
    ids = sorted({str(r["job_id"]) for r in ledger(job_dir) if "job_id" in r})
    out = []
    for job in ids:
        proc = subprocess.run(
            ["scontrol", "show", "job", job], env=ENV, capture_output=True, text=True
        )
        words = [w for w in proc.stdout.split() if w.split("=")[0] in SHOWN]
        out.append(f"job {job}: {' '.join(words) or proc.stderr.strip()}")
    nodes = subprocess.run(
        ["sinfo", "-N", "-h", "-o", "%N %T %E"], env=ENV, capture_output=True, text=True
    )
    return "; ".join(out) + "; nodes: " + ", ".join(nodes.stdout.split("\n")).strip(", ")


SHOWN = {"JobState", "Reason", "Restarts", "NodeList", "ExcNodeList", "BatchHost", "StartTime"}


def watch(job_dir: Path, on_step=None, timeout: float = 300) -> float:
    """Poll the heartbeat until attempt 1 reports; returns that moment (epoch seconds)."""
    hb = job_dir / "heartbeat"
    deadline = time.time() + timeout
    done_hook = False
    while time.time() < deadline:
        try:
            words = hb.read_text().split()  # "step N\nattempt A"
            step, attempt = int(words[1]), int(words[3])
        except (OSError, IndexError, ValueError):
            step, attempt = 0, 0
        if attempt >= 1:
            return time.time()
        if on_step and not done_hook and step >= 3:
            on_step()
            done_hook = True
        time.sleep(0.05)
    raise SystemExit(
        f"no second attempt within {timeout}s: {ledger(job_dir)}; Slurm: {job_state(job_dir)}"
    )


def requeue_how(job_dir: Path) -> str:
    """Which path the requeue took: the supervisor's (ledger `how`) or Slurm's own."""
    hows = [r.get("how", "?") for r in ledger(job_dir) if r["event"] == "requeued"]
    return ",".join(hows) if hows else "by Slurm"


def crash_time(job_dir: Path) -> float:
    return min(r["time"] for r in ledger(job_dir) if r["event"] == "node_exit" and r["exit_code"])


def wait_final(job_dir: Path) -> None:
    for _ in range(600):
        if any(r["event"] == "final" for r in ledger(job_dir)):
            return
        time.sleep(0.5)


def in_allocation(jobs: Path, *options: str) -> tuple[float, float]:
    d = submit(jobs, *options, TRAIN, "--steps", "12", "--fail-attempt", "0", "--fail-step", "6")
    running = watch(d)
    wait_final(d)
    crash = crash_time(d)
    start = next(r["time"] for r in ledger(d) if r["event"] == "attempt_start" and r["attempt"])
    return start - crash, running - crash


def requeue_excluding(jobs: Path) -> tuple[float, float, str]:
    d = submit(
        jobs,
        TRAIN,
        "--steps",
        "30",
        "--step-time",
        "0.3",
        "--fail-attempt",
        "0",
        "--fail-step",
        "8",
    )
    victim: list[str] = []

    def drain() -> None:
        first = next(r for r in ledger(d) if r["event"] == "attempt_start")
        from slurm_supernode.hostlist import expand

        victim.append(expand(first["nodes"])[-1])
        sh("scontrol", "update", f"nodename={victim[0]}", "state=drain", "reason=bench_restart")

    try:
        running = watch(d, on_step=drain)
        wait_final(d)
    finally:
        if victim:
            sh("scontrol", "update", f"nodename={victim[0]}", "state=resume")
    crash = crash_time(d)
    starts = [r for r in ledger(d) if r["event"] == "attempt_start"]
    moved = f"{victim[0]} -> {starts[-1]['nodes']}, {requeue_how(d)}"
    return starts[-1]["time"] - crash, running - crash, moved


def inside(*argv: str) -> list[str]:
    """argv run where the cluster's processes live (PIDs in its pid files are theirs)."""
    which = os.environ.get("SNRUN_MC_SLURM", "host")
    return ["bash", str(MINICLUSTER), "exec", "--slurm", which, "--", *argv]


def tasks_on(node: str, job_id: str) -> list[int]:
    """Host PIDs of the job's tasks on ``node`` (every node is this host; their environment
    says which node they belong to; a namespaced cluster's processes are visible here too)."""
    wanted = {f"SLURMD_NODENAME={node}".encode(), f"SLURM_JOB_ID={job_id}".encode()}
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if wanted <= set((entry / "environ").read_bytes().split(b"\0")):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def lost_node(jobs: Path) -> tuple[float, float, str]:
    """Kill a node's slurmd and freeze its tasks mid-run; (loss -> srun, loss -> running)."""
    d = submit(jobs, TRAIN, "--steps", "80", "--step-time", "0.25", "--ckpt-every", "5")
    state_dir = Path(ENV["SLURM_CONF"]).parent.parent
    lost: dict[str, object] = {}

    def lose() -> None:
        first = next(r for r in ledger(d) if r["event"] == "attempt_start")
        from slurm_supernode.hostlist import expand

        victim = expand(first["nodes"])[-1]
        pid = (state_dir / "run" / f"slurmd-{victim}.pid").read_text().strip()
        frozen = tasks_on(victim, str(first["job_id"]))
        lost.update(victim=victim, frozen=frozen, at=time.time())
        subprocess.run(inside("kill", "-9", pid), env=ENV, check=True)
        subprocess.run(["kill", "-STOP", *map(str, frozen)], check=False)

    try:
        running = watch(d, on_step=lose, timeout=900)
        wait_final(d)
    finally:
        if lost:
            frozen = [str(p) for p in lost["frozen"]]  # type: ignore[union-attr]
            subprocess.run(["kill", "-KILL", *frozen], check=False, capture_output=True)
            victim = str(lost["victim"])
            subprocess.run(inside("slurmd", "-f", ENV["SLURM_CONF"], "-N", victim), env=ENV)
            for _ in range(120):
                state = sh("sinfo", "-h", "-n", victim, "-o", "%t").strip()
                if state.startswith("idle"):
                    break
                time.sleep(0.5)
    at = float(lost["at"])  # type: ignore[arg-type]
    starts = [r for r in ledger(d) if r["event"] == "attempt_start"]
    moved = f"{lost['victim']} -> {starts[-1]['nodes']}, {requeue_how(d)}"
    return starts[-1]["time"] - at, running - at, moved


def plain_requeue(tmp: Path, requeue: str = "--requeue") -> float:
    for old in ("crash", "rerun"):
        (tmp / old).unlink(missing_ok=True)
    script = tmp / "plain.sh"
    script.write_text(
        "#!/bin/bash\n"
        'if [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then\n'
        f"  date +%s.%N > {tmp}/crash; scontrol requeue $SLURM_JOB_ID; sleep 60\n"
        f"else date +%s.%N > {tmp}/rerun; fi\n"
    )
    job = sh(
        "sbatch",
        "--parsable",
        "-N4",
        "--exclusive",
        "--constraint=[sn0|sn1]",
        requeue,
        "-o",
        "/dev/null",
        str(script),
    ).strip()
    for _ in range(600):
        if (tmp / "rerun").exists():
            break
        time.sleep(0.1)
    sh("scancel", job)
    return float((tmp / "rerun").read_text()) - float((tmp / "crash").read_text())


SCENARIOS = ("in-allocation", "requeue", "lost-node", "plain", "expedite")


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument(
        "--only", default=",".join(SCENARIOS), help=f"comma-separated subset of {SCENARIOS}"
    )
    only = set(ap.parse_args().only.split(","))
    if not only <= set(SCENARIOS):
        raise SystemExit(f"bench_restart: --only takes {', '.join(SCENARIOS)}")
    if subprocess.run(["scontrol", "ping"], env=ENV, capture_output=True).returncode:
        raise SystemExit("bench_restart: no local cluster (make cluster-up)")
    conf = Path(ENV["SLURM_CONF"]).read_text()
    cred = next((ln for ln in conf.splitlines() if "cred_expire" in ln and "=" in ln), "default")
    version = sh("sinfo", "--version").strip()
    from slurm_supernode.slurm.version import detect_features

    expedite = detect_features().expedited_requeue
    print(
        f"# bench_restart on {platform.node()}: {os.cpu_count()} CPUs; {version}; {cred.strip()};"
        f" expedited requeue {'on' if expedite else 'off'}; load average {os.getloadavg()[0]:.1f}"
    )
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        runs = ((" --no-fork-workers", ("--no-fork-workers",)), (" (default: fork workers)", ()))
        for label, options in runs:
            if "in-allocation" not in only:
                break
            a_srun, a_run = in_allocation(tmp / "jobs", *options)
            print(
                f"in-allocation restart{label}: crash -> srun {a_srun:5.1f} s, -> running"
                f" {a_run:5.1f} s  (target <= 10 s) {'OK' if a_run <= 10 else 'MISSED'}"
            )
        if "requeue" in only:
            b_srun, b_run, moved = requeue_excluding(tmp / "jobs")
            print(
                f"requeue, node excluded: crash -> srun {b_srun:5.1f} s, -> running {b_run:5.1f} s"
                f"  (target <= 30 s) {'OK' if b_run <= 30 else 'MISSED'}  [{moved}]"
            )
        if "lost-node" in only:
            d_srun, d_run, moved = lost_node(tmp / "jobs")
            print(
                f"lost node             : loss -> srun {d_srun:5.1f} s, -> running {d_run:5.1f} s"
                f"  (SlurmdTimeout 20 s) [{moved}]"
            )
        if "plain" in only:
            c = plain_requeue(tmp)
            print(
                f"plain --requeue       : crash -> batch script rerun {c:5.1f} s (Slurm waits "
                "cred_expire; 120 s with Slurm's default)"
            )
        if "expedite" in only:
            if expedite:
                e = plain_requeue(tmp, "--requeue=expedite")
                print(f"--requeue=expedite    : crash -> batch script rerun {e:5.1f} s")
            else:
                print(
                    "--requeue=expedite    : not allowed on this cluster (no SlurmctldParameters="
                    "enable_expedited_requeue, or a client without the option)"
                )


if __name__ == "__main__":
    main()
