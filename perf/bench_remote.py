"""Issue 43: snrun from a laptop over SSH against snrun on the login node.

The "laptop" and the login node are this machine: a real sshd (Debian's OpenSSH) on a loopback
port in front of the running cluster (SLURM_CONF and PATH as for the other cluster benchmarks).
A loopback hop has almost no network latency, so each figure is printed with the number of ssh
round trips it took (counted by a wrapper in front of ssh): on a real link add one round-trip
time per trip.

1. `--dry-run` and a held submission: on the login node, then with --cluster (cold: a new
   connection and the whole code folder; warm: the shared connection, nothing to send; one file
   changed: one content sent).
2. the status of 20 jobs: one `api.remote.statuses` call against 20 `snrun --cluster status`.
3. `logs -f` latency: a job prints a timestamp every 0.2 s; two followers, one local and one
   over SSH, note when each line arrives (the same clock).

    python3 perf/bench_remote.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.sshd import close_masters, keygen, start_sshd  # noqa: E402

TICKER = """import time
for i in range(150):
    print(f"stamp {time.time():.4f}", flush=True)
    time.sleep(0.2)
"""


def machine() -> str:
    load = os.getloadavg()
    return (
        f"{platform.node()}, {os.cpu_count()} CPUs, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )


class Setup:
    def __init__(self, base: Path):
        self.base = base
        key = keygen(base / "id")
        self.sshd = start_sshd(base / "sshd", [key])
        known = base / "known_hosts"
        known.write_text(self.sshd.known_hosts_line())
        (base / "ssh_config").write_text(
            f"Host login\n  HostName 127.0.0.1\n  Port {self.sshd.port}\n  IdentityFile {key}\n"
            f"  IdentitiesOnly yes\n  UserKnownHostsFile {known}\n  StrictHostKeyChecking yes\n"
        )
        wrap = base / "bin"
        wrap.mkdir()
        self.trips = base / "trips"
        real = shutil.which("ssh")
        (wrap / "ssh").write_text(f'#!/bin/sh\necho x >> {self.trips}\nexec {real} "$@"\n')
        (wrap / "ssh").chmod(0o755)
        self.jobs = base / "jobs"
        env = {"SLURM_CONF": os.environ.get("SLURM_CONF", ""), "PYTHONPATH": str(ROOT)}
        (base / "clusters.yaml").write_text(
            "clusters:\n  mc:\n    destination: login\n"
            f"    snrun: {sys.executable} -m slurm_supernode\n    site: local\n"
            f"    jobs_dir: {self.jobs}\n    path: [{json.dumps(os.environ['PATH'])}]\n"
            f"    env: {json.dumps(env)}\n    ssh_options: [-F, {base / 'ssh_config'}]\n"
            f"    code_dir: {base / 'store'}\n"
        )
        (base / "ctl").mkdir(mode=0o700)
        self.env = os.environ | {
            "PYTHONPATH": str(ROOT),
            "SNRUN_SITE": "local",
            "SNRUN_JOBS_DIR": str(self.jobs),
            "SNRUN_CLUSTERS_FILE": str(base / "clusters.yaml"),
            "SNRUN_SSH_CONTROL_DIR": str(base / "ctl"),
            "PATH": f"{wrap}:{os.environ['PATH']}",
        }
        self.proj = base / "proj"
        self.proj.mkdir()
        for i in range(20):
            (self.proj / f"mod{i}.py").write_text(f"X = {i}\n" + "# padding\n" * 200)
        (self.proj / "train.py").write_text(TICKER)

    def snrun(self, *args: str) -> tuple[float, int, str]:
        """(seconds, ssh round trips, stdout) of one snrun command."""
        self.trips.write_text("")
        t0 = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "slurm_supernode", *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - t0
        if out.returncode != 0:
            raise SystemExit(f"snrun {args}: {out.stderr[-2000:]}")
        return wall, len(self.trips.read_text().split()), out.stdout

    def close(self) -> None:
        close_masters(self.base / "ctl")
        self.sshd.stop()


def row(name: str, walls: list[float], trips: int) -> None:
    med = statistics.median(walls)
    print(
        f"  {name:<52} {med:7.3f} s median of {len(walls)} ({min(walls):.3f}-{max(walls):.3f}), "
        f"{trips} ssh round trip(s)"
    )


def submissions(s: Setup, runs: int) -> list[str]:
    opts = ["-t", "5", "--nproc-per-node", "1", "--sbatch=--hold"]
    train = str(s.proj / "train.py")
    ids: list[str] = []
    print("== submit (held, cancelled afterwards) and --dry-run: login node vs --cluster")
    for name, args in (
        ("dry run, on the login node", ["--dry-run", *opts, train]),
        ("dry run, --cluster (warm)", ["--cluster", "mc", "--dry-run", *opts, train]),
    ):
        results = [s.snrun(*args) for _ in range(runs)]
        row(name, [w for w, _, _ in results], results[-1][1])
    for stamp in (s.base / "ctl").glob("*.snrun"):  # cold: the version is checked again too
        stamp.unlink()
    shutil.rmtree(s.base / "store", ignore_errors=True)
    subprocess.run(
        [
            "ssh",
            "-F",
            str(s.base / "ssh_config"),
            "-o",
            f"ControlPath={s.base / 'ctl'}/%C",
            "-O",
            "exit",
            "login",
        ],
        capture_output=True,
        check=False,
    )
    shutil.rmtree(s.base / "store", ignore_errors=True)
    cases: list[tuple[str, list[str], bool]] = [
        ("submit, on the login node", ["--parsable", *opts, train], False),
        (
            "submit, --cluster, cold (connect, version, 21 files)",
            ["--cluster", "mc", "--parsable", *opts, train],
            False,
        ),
        (
            "submit, --cluster, warm, nothing to send",
            ["--cluster", "mc", "--parsable", *opts, train],
            False,
        ),
        (
            "submit, --cluster, warm, one file changed",
            ["--cluster", "mc", "--parsable", *opts, train],
            True,
        ),
    ]
    for name, args, change in cases:
        walls, trips = [], 0
        for i in range(1 if "cold" in name else runs):
            if change:
                (s.proj / "mod0.py").write_text(f"X = {time.time()} # {i}\n")
            wall, trips, out = s.snrun(*args)
            walls.append(wall)
            ids.append(out.split()[-1])
        row(name, walls, trips)
    return ids


def statuses(s: Setup, ids: list[str]) -> None:
    from slurm_supernode.api import remote

    os.environ.update({k: s.env[k] for k in ("SNRUN_CLUSTERS_FILE", "SNRUN_SSH_CONTROL_DIR")})
    opts = ["-t", "5", "--nproc-per-node", "1", "--sbatch=--hold", str(s.proj / "train.py")]
    while len(ids) < 20:  # held jobs, cancelled afterwards
        ids.append(s.snrun("--parsable", *opts)[2].split()[-1])
    print(f"== status of {len(ids)} jobs")
    transport = remote.connect("mc")
    before = transport.commands
    t0 = time.perf_counter()
    remote.run_calls(transport, [["status", "--json", j] for j in ids])
    row("api.remote.statuses, one call", [time.perf_counter() - t0], transport.commands - before)
    t0 = time.perf_counter()
    trips = 0
    for j in ids:
        trips += s.snrun("--cluster", "mc", "status", j)[1]
    row(f"{len(ids)} x snrun --cluster status", [time.perf_counter() - t0], trips)


def follow_latency(s: Setup) -> None:
    print("== logs -f: line written -> line shown (same clock), 0.2 s between lines")
    out = s.snrun("--parsable", "-t", "5", "--nproc-per-node", "1", str(s.proj / "train.py"))[2]
    job = out.split()[-1]
    lags: dict[str, list[float]] = {"local": [], "remote": []}
    procs = []
    for name, pre in (("local", []), ("remote", ["--cluster", "mc"])):
        proc = subprocess.Popen(
            [sys.executable, "-m", "slurm_supernode", *pre, "logs", "-f", "--rank", "0", job],
            env=s.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        procs.append(proc)
        threading.Thread(target=_note, args=(proc, lags[name]), daemon=True).start()
    for proc in procs:
        proc.wait(timeout=600)
    for name, values in lags.items():
        live = values[10:]  # the first lines are read from the file's start, not followed
        if live:
            q = statistics.quantiles(live, n=20)
            print(
                f"  {name:<8} median {statistics.median(live) * 1e3:6.0f} ms, "
                f"p95 {q[18] * 1e3:6.0f} ms over {len(live)} lines"
            )


def _note(proc: subprocess.Popen[str], into: list[float]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        now = time.time()
        if "stamp " in line:
            into.append(now - float(line.split("stamp ")[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    ns = parser.parse_args()
    print(f"# {time.strftime('%F %T UTC', time.gmtime())} on {machine()}")
    with tempfile.TemporaryDirectory(prefix="snrun-rb-") as tmp:
        s = Setup(Path(tmp))
        try:
            ids = submissions(s, ns.runs)
            statuses(s, ids)
            subprocess.run(["scancel", *ids], env=s.env, check=False)
            follow_latency(s)
        finally:
            s.close()
    print(f"# after: {machine()}")


if __name__ == "__main__":
    main()
