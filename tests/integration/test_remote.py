"""snrun from a "laptop" over SSH: a real OpenSSH server (Debian's sshd on a loopback port,
its own host key, key authentication only) in front of the test cluster; this machine is the
login node. One real job serves the verbs; a second (after it) the incremental upload."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from slurm_supernode.errors import InputError
from tests.integration.helpers import ROOT, pythonpath
from tests.sshd import close_masters, keygen, start_sshd

pytestmark = pytest.mark.slurm

TRAIN = """import sys, time
from helper import VERSION
print(f"started {VERSION}", flush=True)
if "--quick" in sys.argv:
    sys.exit(0)
for i in range(2400):
    print(f"tick {i} {time.time():.3f}", flush=True)
    time.sleep(0.25)
"""


class Laptop:
    """The user's side: a clusters file, an ssh config with aliases, snrun run as they would."""

    def __init__(self, folder: Path, jobs: Path):
        self.folder, self.jobs = folder, jobs
        self.env = os.environ | {
            "PYTHONPATH": str(ROOT),
            "SNRUN_CLUSTERS_FILE": str(folder / "clusters.yaml"),
            "SNRUN_SSH_CONTROL_DIR": str(folder / "ctl"),
        }
        self.env.pop("SNRUN_CLUSTER", None)
        self.env.pop("SNRUN_SITE", None)

    def snrun(self, *args: str, timeout: float = 240, check: bool = True):
        out = subprocess.run(
            [sys.executable, "-m", "slurm_supernode", *args],
            env=self.env,
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and out.returncode != 0:
            raise AssertionError(f"snrun {args} exited {out.returncode}: {out.stderr[-3000:]}")
        return out


@pytest.fixture(scope="module")
def laptop(slurm_cluster, tmp_path_factory):
    base = tmp_path_factory.mktemp("rm")
    key, stranger = keygen(base / "id"), keygen(base / "stranger")
    login = start_sshd(base / "login", [key])
    jump = start_sshd(base / "jump", [key])
    known = base / "known_hosts"
    known.write_text(
        login.known_hosts_line()
        + jump.known_hosts_line()
        + login.known_hosts_line().replace("127.0.0.1", "localhost", 1)
    )
    user = subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
    common = f"  UserKnownHostsFile {known}\n  StrictHostKeyChecking yes\n  IdentitiesOnly yes\n"
    here = f"  HostName 127.0.0.1\n  User {user}\n{common}"
    # a shared connection is found by host, port and user: each alias below has its own
    (base / "ssh_config").write_text(
        f"Host login\n  Port {login.port}\n  IdentityFile {key}\n{here}"
        f"Host gateway\n  Port {jump.port}\n  IdentityFile {key}\n{here}"
        f"Host behind-gateway\n  HostName localhost\n  User {user}\n  Port {login.port}\n"
        f"  IdentityFile {key}\n  ProxyJump gateway\n{common}"
        f"Host stranger\n  HostName 127.0.0.1\n  User nobody\n  Port {login.port}\n"
        f"  IdentityFile {stranger}\n{common}"
        f"Host nowhere\n  Port 1\n  IdentityFile {key}\n{here}"
    )
    old = base / "old-snrun"
    old.write_text("#!/bin/sh\necho 'snrun 0.1.0'\n")
    old.chmod(0o755)
    jobs = base / "jobs"
    remote_env = {
        "SLURM_CONF": os.environ["SLURM_CONF"],
        "PYTHONPATH": pythonpath(),
        **{k: os.environ[k] for k in ("SNRUN_SLURM_BACKEND",) if k in os.environ},
    }
    entry = (
        "    snrun: {snrun}\n    site: local\n    jobs_dir: {jobs}\n"
        "    path: [{path}]\n    env: {env}\n    ssh_options: [-F, {cfg}]\n    code_dir: {code}\n"
    )

    def cluster(name, dest, snrun=f"{sys.executable} -m slurm_supernode", code=base / "store"):
        return f"  {name}:\n    destination: {dest}\n" + entry.format(
            snrun=snrun,
            jobs=jobs,
            path=json.dumps(os.environ["PATH"]),
            env=json.dumps(remote_env),
            cfg=base / "ssh_config",
            code=code,
        )

    (base / "clusters.yaml").write_text(
        "clusters:\n"
        + cluster("mc", "login")
        + cluster("jumped", "behind-gateway")
        + cluster("locked", "stranger")
        + cluster("down", "nowhere")
        + cluster("bare", "login", snrun="/nonexistent/bin/snrun")
        + cluster("old", "login", snrun=str(old))
        + cluster("full", "login", code="/dev/null/store")
    )
    (base / "ctl").mkdir(mode=0o700)
    try:
        yield Laptop(base, jobs)
    finally:
        close_masters(base / "ctl")
        for server in (login, jump):
            server.stop()


def _lines(pipe, out: queue.Queue) -> None:
    for line in iter(pipe.readline, ""):
        out.put(line)


def _until(q: queue.Queue, pred, timeout: float, what: str) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = q.get(timeout=1)
        except queue.Empty:
            continue
        seen.append(line)
        if pred(line):
            return seen
    raise AssertionError(f"no {what} within {timeout} s: {seen[-20:]}")


def _remote_state(job: int, want: set[str], timeout: float = 300) -> dict:
    from slurm_supernode.api import remote

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        summary = remote.status(job, cluster="mc")
        if summary["state"] in want:
            return summary
        time.sleep(1)
    raise AssertionError(f"job {job} not {want} in {timeout} s: {summary}")


def test_every_verb_through_the_cluster(laptop, tmp_path, monkeypatch):

    for key in ("SNRUN_CLUSTERS_FILE", "SNRUN_SSH_CONTROL_DIR"):
        monkeypatch.setenv(key, laptop.env[key])
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text(TRAIN)
    (proj / "helper.py").write_text('VERSION = "v1"\n')
    opts = ["-t", "5", "--nproc-per-node", "1"]

    listed = laptop.snrun("clusters", "mc", "jumped").stdout
    row = next(line.split() for line in listed.splitlines() if line.startswith("mc "))
    assert row[2:4] == ["ok", "0.2.0"] and row[4].count(".") == 2, listed

    dry = laptop.snrun("--cluster", "mc", "--dry-run", *opts, str(proj / "train.py"))
    assert "sent 2 of 2 file(s)" in dry.stderr and "dry run: nothing submitted" in dry.stdout
    assert (
        "n0" in laptop.snrun("--cluster", "mc", "plan", "-S", "1", "--nproc-per-node", "1").stdout
    )

    sub = laptop.snrun("--cluster", "mc", "--parsable", *opts, str(proj / "train.py"))
    assert "2 file(s) already on mc" in sub.stderr  # the dry run sent them
    job = int(sub.stdout.split()[-1])
    job_dir = (laptop.jobs / "by-id" / str(job)).resolve()
    assert (job_dir / "code" / "helper.py").read_text() == 'VERSION = "v1"\n'
    _remote_state(job, {"RUNNING"})

    _follow_across_a_drop(laptop, job)
    host = laptop.snrun(
        "--cluster", "mc", "attach", str(job), "--", "sh", "-c", "echo $SLURM_JOB_ID"
    )
    assert host.stdout.split() == [str(job)]
    stacks = laptop.snrun("--cluster", "mc", "attach", "--py-spy", "--rank", "0", str(job))
    assert "== rank 0" in stacks.stdout and "train.py" in stacks.stdout, stacks.stdout

    _second_job_after_the_first(laptop, proj, opts, job)


def _follow_across_a_drop(laptop, job: int) -> None:
    """logs -f through a connection that drops: it reconnects; no line twice, none lost."""
    follower = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "slurm_supernode",
            "--cluster",
            "mc",
            "logs",
            "-f",
            "--rank",
            "0",
            str(job),
        ],
        env=laptop.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out_q: queue.Queue = queue.Queue()
    err_q: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(follower.stdout, out_q), daemon=True).start()
    threading.Thread(target=_lines, args=(follower.stderr, err_q), daemon=True).start()
    try:
        before = _until(out_q, lambda s: "tick 3 " in s, 180, "tick in logs -f")
        assert "[rank 0] started v1" in "".join(before)
        from slurm_supernode.remote.config import find_cluster
        from slurm_supernode.remote.ssh import Transport

        master = Transport(find_cluster("mc")).master_pid()
        assert master
        os.kill(master, signal.SIGKILL)  # the connection drops under the follower
        _until(err_q, lambda s: "dropped; reconnecting" in s, 60, "reconnect notice")
        after = _until(
            out_q,
            lambda s: (
                "tick" in s
                and int(s.split()[3]) >= 8 + int([x for x in before if "tick" in x][-1].split()[3])
            ),
            120,
            "ticks after reconnecting",
        )
    finally:
        follower.terminate()
        follower.wait(30)
    ticks = [int(s.split()[3]) for s in before + after if " tick " in s]
    assert ticks == list(range(ticks[0], ticks[0] + len(ticks))), ticks  # none twice, none lost


def _second_job_after_the_first(laptop, proj: Path, opts: list[str], job: int) -> None:
    """Only the changed file is sent and the job ran it; one round trip for two statuses;
    cancel, --after, sweeps and the doctor (dry runs)."""
    from slurm_supernode.api import remote

    (proj / "helper.py").write_text('VERSION = "v2"\n')
    second = laptop.snrun(
        "--cluster",
        "mc",
        "--parsable",
        "--after",
        f"{job}:any",
        *opts,
        str(proj / "train.py"),
        "--quick",
    )
    assert "sent 1 of 2 file(s)" in second.stderr, second.stderr  # only the changed file
    job2 = int(second.stdout.split()[-1])

    transport = remote.connect("mc")
    asked = transport.commands
    both = remote.run_calls(transport, [["status", "--json", str(j)] for j in (job, job2)])
    assert transport.commands == asked + 1  # the status of both: one round trip
    assert json.loads(both[0].stdout)["state"] == "RUNNING"

    cancelled = laptop.snrun("--cluster", "mc", "cancel", str(job))
    assert "cancelled job chain" in cancelled.stdout and str(job) in cancelled.stdout
    _remote_state(job2, {"COMPLETED"})
    logs2 = laptop.snrun("--cluster", "mc", "logs", "--rank", "0", str(job2)).stdout
    assert "[rank 0] started v2" in logs2  # what was sent is what ran
    job2_dir = (laptop.jobs / "by-id" / str(job2)).resolve()
    assert (job2_dir / "code" / "helper.py").read_text() == 'VERSION = "v2"\n'
    assert (job2_dir / "code" / "train.py").read_text() == TRAIN

    swept = laptop.snrun(
        "--cluster",
        "mc",
        "sweep",
        "--sweep",
        "x=1,2",
        "--dry-run",
        *opts,
        str(proj / "train.py"),
        "--quick",
    )
    planned = remote.submit(
        proj / "train.py", ["--quick"], options=opts, cluster="mc", dry_run=True
    )  # the API's submit: the same upload, a JSON plan
    assert json.loads(planned)["sbatch_command"].startswith("sbatch ")
    assert "already on mc" in swept.stderr and "--array" in swept.stdout, swept.stdout[-2000:]
    doctor = laptop.snrun("--cluster", "mc", "doctor", "-S", "1", "--dry-run")
    assert "sbatch" in doctor.stdout


def test_bench_report_html_comes_back(laptop, tmp_path):
    from slurm_supernode.bench.store import open_store
    from tests.bench.helpers import make_run

    db = tmp_path / "on-cluster.sqlite"  # a path on the cluster, passed as it is
    with open_store(db) as store:
        for i in range(3):
            store.add_run(make_run(1e9 + i * 86400, site="local"))
    page = tmp_path / "here" / "report.html"
    page.parent.mkdir()
    rep = laptop.snrun("--cluster", "mc", "bench", "report", "--db", str(db), "--html", str(page))
    assert page.read_text().lstrip().lower().startswith("<!doctype html"), rep.stderr
    assert "copied from mc" in rep.stderr


def test_jump_host_and_failures_in_words(laptop, tmp_path, monkeypatch):
    jumped = laptop.snrun("--cluster", "jumped", "status")
    assert jumped.returncode == 0

    cases = {
        "down": "host unreachable",
        "locked": "authentication refused",
        "bare": "no snrun on the login node: `/nonexistent/bin/snrun` not found",
        "old": "the login node has snrun 0.1.0; snrun >= 0.2.0 is needed there",
    }
    for name, said in cases.items():
        out = laptop.snrun("--cluster", name, "status", check=False)
        assert out.returncode != 0 and said in out.stderr, (name, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr

    failed = laptop.snrun("--cluster", "mc", "status", "999999", check=False)
    assert failed.returncode == 2 and "snrun status: error:" in failed.stderr
    from slurm_supernode.api import remote
    from slurm_supernode.remote.failures import RemoteError, RemoteErrorKind

    for key in ("SNRUN_CLUSTERS_FILE", "SNRUN_SSH_CONTROL_DIR"):
        monkeypatch.setenv(key, laptop.env[key])
    with pytest.raises(RemoteError, match=r"exited 2 on the login node: snrun status: error:") as e:
        remote.status(999999, cluster="mc")
    assert e.value.kind is RemoteErrorKind.FAILED and "\n" not in str(e.value)
    with pytest.raises(InputError, match="cluster"):
        remote.status(1, cluster=7)  # type: ignore[arg-type]

    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "train.py").write_text("print(1)\n")
    jobs_before = sorted(laptop.jobs.glob("*")) if laptop.jobs.exists() else []
    full = laptop.snrun("--cluster", "full", "-t", "5", str(proj / "train.py"), check=False)
    assert full.returncode != 0 and "code upload failed, nothing submitted" in full.stderr
    assert (sorted(laptop.jobs.glob("*")) if laptop.jobs.exists() else []) == jobs_before
