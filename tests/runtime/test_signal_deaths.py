"""A rank killed by a signal writes nothing; its agent records it in the ledger (runtime/
signal_deaths.py), dated when it last saw the rank alive, so `snrun status` and the supervisor
name it and not a peer whose error about the lost connection came a moment later. No error
file is written in the rank's name: the ledger's times order the ranks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from slurm_supernode.chain import ledger
from slurm_supernode.forensics.logs import first_error, node_log_dir
from slurm_supernode.forensics.report import cause_in_words
from slurm_supernode.forensics.torchrun_report import parse_failures, rank_pids
from slurm_supernode.runtime import agent_plan, failfast, launcher_stop, rank_sightings
from slurm_supernode.runtime.agent_plan import FAST_EXIT, RANK_ENTRY
from slurm_supernode.runtime.failure_watch import failed_by_time
from slurm_supernode.runtime.rank_entry import read_rank_mark
from slurm_supernode.runtime.signal_deaths import record_signal_deaths, signal_deaths, unreported
from slurm_supernode.runtime.torchrun_child import run_child


def _rank_dir(job_dir: Path, node: str, node_rank: int, local: int = 0) -> Path:
    """torchrun's folders of one rank, and the agent's record of the node (nproc 1)."""
    env = job_dir / "env" / f"{node}.0.json"
    env.parent.mkdir(parents=True, exist_ok=True)
    env.write_text(json.dumps({"argv": ["--nproc-per-node=1"], "node_rank": node_rank}))
    folder = node_log_dir(job_dir, 0, node) / "run_x" / "attempt_0" / str(local)
    folder.mkdir(parents=True)
    return folder


def _peer_error(folder: Path, when: float) -> None:
    """What a peer's error hook writes: torch's whole-second timestamp, written at ``when``."""
    data = {
        "message": {
            "message": "RuntimeError: Connection closed by peer",
            "extraInfo": {"timestamp": str(int(when))},
        }
    }
    (folder / "error.json").write_text(json.dumps(data))
    os.utime(folder / "error.json", ns=(int(when * 1e9),) * 2)


KILLED = {"rank": 1, "local_rank": 0, "exit_code": -9, "signal": "SIGKILL", "first": True}


def test_only_signals_that_are_a_cause_count() -> None:
    stopped = {"rank": 0, "local_rank": 0, "exit_code": -15, "signal": "SIGTERM", "first": False}
    segv = {**KILLED, "rank": 2, "exit_code": -11, "signal": "SIGSEGV"}
    raised = {"rank": 3, "local_rank": 0, "exit_code": 1, "first": False}
    assert signal_deaths([stopped, KILLED, segv, raised]) == [KILLED, segv]


def test_the_killed_rank_is_named_though_its_peer_wrote_first(tmp_path: Path) -> None:
    """Rank 1 on n1 was SIGKILLed (last seen alive at t); rank 0 on n0 raised about the lost
    connection 50 ms later, in the same second, and its file was written first."""
    t = int(time.time()) - 10 + 0.2
    peer = _rank_dir(tmp_path, "n0", 0)
    killed = _rank_dir(tmp_path, "n1", 1)
    _peer_error(peer, t + 0.05)
    records = record_signal_deaths(
        tmp_path,
        attempt=0,
        node="n1",
        ranks=[KILLED],
        pids={1: 4242},
        last_seen={4242: t},
        fallback=t + 5,
    )
    # the peer has only its error file (no ledger record): dated to the second, then its time
    err = first_error(tmp_path, 0, ledger.rank_failures(tmp_path)[0])
    assert err is not None and (err["rank"], err["node"]) == (1, "n1"), err
    assert cause_in_words(err) == "rank 1 on n1: killed by signal 9 (SIGKILL) (+1 more ranks)"
    assert err["log"] == str(killed / "stderr.log") and err["error_file"] is None
    assert first_error(tmp_path, 0)["rank"] == 0  # type: ignore[index]  # without the ledger
    (rec,) = records
    assert (rec["event"], rec["rank"], rec["signal"], rec["died"]) == (
        "rank_failed", 1, "SIGKILL", round(t, 3)
    )  # fmt: skip
    assert not (killed / "error.json").exists()  # nothing written in the rank's name
    # the peer's rank_failed came first in the ledger; the supervisor orders by time of death
    ledger.append(tmp_path, "rank_failed", attempt=0, node="n0", rank=0, error="RuntimeError: x")
    recs = [*ledger.read(tmp_path)]
    recs.sort(key=lambda r: r["event"] != "rank_failed" or r["node"] != "n0")  # n0's first
    assert failed_by_time(recs, 0, ("n0",)) == ("n1", "n0")
    # a rank on the killed rank's node that raised about it, recorded before the agent's record
    ledger.append(tmp_path, "rank_failed", attempt=0, node="n1", rank=2, error="RuntimeError: y")
    recs = [*ledger.read(tmp_path)]
    recs.sort(key=lambda r: r.get("rank") != 2)
    chain = ledger.fold(recs)
    assert chain.attempts[0].rank_errors["n1"] == "rank 1: killed by signal 9 (SIGKILL)"
    # a peer's own record, written after the death, though its error file is older (an
    # earlier second): the ledger's time decides
    _peer_error(peer, t - 2)
    err = first_error(tmp_path, 0, ledger.rank_failures(tmp_path)[0])
    assert err is not None and err["rank"] == 1 and err["failed_ranks"] == 3, err
    peer_first = [{"rank": 0, "node": "n0", "error": "RuntimeError: x", "at": t - 1}]
    err = first_error(tmp_path, 0, [*ledger.rank_failures(tmp_path)[0], *peer_first])
    assert err is not None and (err["rank"], err["type"]) == (0, "RuntimeError"), err
    assert err["message"] == "Connection closed by peer"  # the words of its error file
    assert failed_by_time(recs, 0, ()) == ()  # no fail fast: nothing added
    assert failed_by_time(recs, 1, ("n0",)) == ("n0",)  # another attempt's records


def test_a_ranks_own_error_file_is_kept_and_none_is_made(tmp_path: Path) -> None:
    folder = _rank_dir(tmp_path, "n1", 1)
    _peer_error(folder, time.time())
    before = (folder / "error.json").read_text()
    other = _rank_dir(tmp_path, "n2", 2)
    kw = {"attempt": 0, "pids": {}, "last_seen": {}, "fallback": time.time()}
    record_signal_deaths(tmp_path, node="n1", ranks=[KILLED], **kw)
    record_signal_deaths(tmp_path, node="n2", ranks=[{**KILLED, "rank": 2}], **kw)
    assert (folder / "error.json").read_text() == before
    assert not (other / "error.json").exists()
    # a rank the ledger names whose folder torchrun never made: the node's logs
    kw["fallback"] = 1.0
    record_signal_deaths(tmp_path, node="n3", ranks=[{**KILLED, "rank": 5}], **kw)
    err = first_error(tmp_path, 0, ledger.rank_failures(tmp_path)[0])
    assert err is not None and (err["rank"], err["node"]) == (5, "n3"), err
    assert err["log"] == str(node_log_dir(tmp_path, 0, "n3"))


SELF_KILL = """
import os, signal, time
print("rank alive", flush=True)
time.sleep(0.5)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_real_torchrun_rank_killed_by_sigkill_is_dated_by_the_agents_sightings(tmp_path):
    """The agent's runner sees the rank alive; torchrun reports it killed; the record is
    dated before torchrun's exit, after the rank started."""
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text(SELF_KILL)
    log_dir = node_log_dir(tmp_path, 0, "n1")
    argv = [
        sys.executable, FAST_EXIT, "-m", "torch.distributed.run", "--standalone",
        "--nproc-per-node=1", f"--log-dir={log_dir}", "--redirects=3",
        "--run-path", "--start-method=fork", RANK_ENTRY, str(script),
    ]  # fmt: skip
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=root, OMP_NUM_THREADS="1", PYTORCH_NVML_BASED_CUDA_CHECK="1")
    started = time.time()
    done = run_child(argv, env)
    ended = time.time()
    assert done.code == 1, done.tail[-2000:]
    ranks = parse_failures(done.tail)
    assert [(r["rank"], r.get("signal")) for r in ranks] == [(0, "SIGKILL")]
    pids = rank_pids(done.tail)
    assert pids[0] in done.last_seen  # the agent saw the rank alive
    (rec,) = record_signal_deaths(
        tmp_path, attempt=0, node="n1", ranks=ranks, pids=pids,
        last_seen=done.last_seen, fallback=ended,
    )  # fmt: skip
    assert started < rec["died"] < ended and rec["error"] == "killed by signal 9 (SIGKILL)"
    assert list(log_dir.glob("*/attempt_0/0/error.json")) == []  # torch wrote none either
    err = first_error(tmp_path, 0, ledger.rank_failures(tmp_path)[0])
    assert err is not None and err["log"].endswith("/0/stderr.log"), err


def test_a_launcher_that_reports_its_own_failure_is_not_stopped(tmp_path):
    """A stop request that comes after torchrun began to end its ranks on its own (its rank
    was killed, a peer's error came first): a failing node, left to end by itself with its
    report (however long torch takes to stop a rank stuck in a collective)."""
    launcher = subprocess.Popen(["sleep", "60"])
    request = failfast.StopRequest(0, ("n0",), "n0 failed first")
    try:
        reported = iter([True, False, False])  # once is enough
        stopper = launcher_stop.LauncherStop(
            lambda: request, lambda: [launcher.pid], list, lambda: next(reported)
        )
        for _ in range(3):
            stopper.look()
        assert stopper.reason is None and launcher.poll() is None
    finally:
        launcher.kill()
        launcher.wait()
    silent = subprocess.Popen(["sleep", "60"])  # without a failure of its own: stopped at once
    try:
        stopper = launcher_stop.LauncherStop(
            lambda: request, lambda: [silent.pid], list, lambda: False
        )
        stopper.look()
        assert stopper.reason == "n0 failed first" and silent.wait(timeout=30) == -signal.SIGKILL
    finally:
        silent.kill()
        silent.wait()


# A launcher whose one worker dies of SIGKILL; it does not reap it (a loaded torchrun that has
# not looked yet) until the test lets it (argv[2] appears), then exits 1. argv[1]: made once
# the worker is dead.
SLOW_LAUNCHER = """
import os, pathlib, signal, sys, time
pid = os.fork()
if pid == 0:
    os.kill(os.getpid(), signal.SIGKILL)
os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # dead, not reaped: a zombie
pathlib.Path(sys.argv[1]).touch()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.02)
os.waitpid(pid, 0)
sys.exit(1)
"""


def test_a_rank_killed_before_torchrun_noticed_spares_its_node(tmp_path: Path) -> None:
    """The agent sees its rank dead of SIGKILL (a zombie torchrun has not reaped): a stop
    request that comes then leaves torchrun to notice and report it."""
    dead, go = tmp_path / "dead", tmp_path / "go"

    def request_once_dead() -> None:
        while not dead.exists():
            time.sleep(0.02)
        failfast.request_stop(tmp_path, 0, ["n0"], "n0 failed first")
        threading.Timer(0.8, go.touch).start()  # it would be killed at once if it were stopped

    threading.Thread(target=request_once_dead, daemon=True).start()
    sigs = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
    saved = {s: signal.getsignal(s) for s in sigs}
    try:
        argv = [sys.executable, "-c", SLOW_LAUNCHER, str(dead), str(go)]
        done = run_child(argv, dict(os.environ), stop=failfast.StopWatch(tmp_path, 0, "n1"))
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    assert (done.code, done.stopped) == (1, None)


def test_a_zombie_rank_is_seen_killed_by_its_signal(tmp_path: Path) -> None:
    """What the agent reads of a dead, unreaped rank: the signal (SIGKILL counts, exit 0 and
    the stop signals do not)."""
    code = """
import os, signal, sys, time
for how in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        if how == "exit0":
            os._exit(0)
        os.kill(os.getpid(), getattr(signal, how))
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
print("ready", flush=True)
time.sleep(60)
"""
    launcher = subprocess.Popen(
        [sys.executable, "-c", code, "SIGKILL", "exit0", "SIGTERM", "SIGSEGV"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert launcher.stdout is not None and launcher.stdout.readline() == "ready\n"
        sightings = rank_sightings.RankSightings(lambda: [launcher.pid])
        sightings.look()
        assert sorted(sightings.killed.values()) == [signal.SIGKILL, signal.SIGSEGV]
        assert not sightings.last_seen  # nobody alive
    finally:
        launcher.kill()
        launcher.wait()


@pytest.mark.parametrize(
    ("body", "marked"),
    [("pass", True), ("import sys; sys.exit(0)", True), ("import sys; sys.exit(3)", False),
     ("raise RuntimeError('x')", False)],
)  # fmt: skip
def test_a_forked_rank_that_ends_well_leaves_its_mark(tmp_path: Path, body: str, marked: bool):
    """rank_entry marks a clean exit with the rank's process id; a failure leaves none."""
    script = tmp_path / "train.py"
    script.write_text(body + "\n")
    exits = tmp_path / "rank-exits"
    root = str(Path(__file__).resolve().parents[2])  # this checkout's snrun, not an install's
    env = dict(os.environ, SNRUN_RANK_EXITS=str(exits), RANK="5", LOCAL_RANK="1", PYTHONPATH=root)
    env.pop("SNRUN_JOB_DIR", None)
    proc = subprocess.Popen(
        [sys.executable, RANK_ENTRY, str(script)], env=env, stderr=subprocess.PIPE
    )
    proc.communicate(timeout=60)
    assert (exits / str(proc.pid)).exists() is marked
    assert (exits / f"{proc.pid}.failed").exists() is not marked  # an exception, an exit code
    assert (proc.returncode == 0) is marked
    assert read_rank_mark(str(exits), proc.pid) == (5, 1)  # every rank names itself at start


# A launcher with two ranks: "clean" marks its exit and ends, "killed" dies of SIGKILL; it reaps
# both at once (the agent never sees a zombie), then waits.
REAPING_LAUNCHER = """
import os, signal, sys, time
exits, go = sys.argv[1], sys.argv[2]
kids = []
for how in ("clean", "killed"):
    pid = os.fork()
    if pid == 0:
        while not os.path.exists(go):
            time.sleep(0.01)
        if how == "clean":
            open(os.path.join(exits, str(os.getpid())), "w").close()
            os._exit(0)
        os.kill(os.getpid(), signal.SIGKILL)
    kids.append(pid)
print(*kids, flush=True)
for pid in kids:
    os.waitpid(pid, 0)
print("reaped", flush=True)
time.sleep(60)
"""


def test_a_rank_gone_without_its_clean_exit_mark_has_vanished(tmp_path: Path) -> None:
    """torchrun reaped a rank killed by a signal before the agent saw its zombie: without the
    clean-exit mark the agent still knows it died (its node is a failing one)."""
    exits, go = tmp_path / "rank-exits", tmp_path / "go"
    exits.mkdir()
    launcher = subprocess.Popen(
        [sys.executable, "-c", REAPING_LAUNCHER, str(exits), str(go)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert launcher.stdout is not None
        clean, killed = map(int, launcher.stdout.readline().split())
        sightings = rank_sightings.RankSightings(lambda: [launcher.pid], str(exits))
        sightings.look()
        assert set(sightings.last_seen) == {clean, killed} and not sightings.vanished
        go.touch()
        assert launcher.stdout.readline() == "reaped\n"
        sightings.look()
        assert sightings.vanished == {killed} and not sightings.killed
        unmarked = rank_sightings.RankSightings(lambda: [launcher.pid])  # spawned ranks: no marks
        unmarked.look()
        assert not unmarked.vanished
    finally:
        launcher.kill()
        launcher.wait()


# Two forked ranks on one node: rank 0 dies of SIGKILL, rank 1 takes a while to stop when
# torchrun asks (as one stuck in a collective does) and says nothing meanwhile.
KILLED_AND_SLOW_SIBLING = """
import os, pathlib, signal, sys, time
rank = int(os.environ["RANK"])
if rank == 1:
    signal.signal(signal.SIGTERM, lambda *_: (time.sleep(2), sys.exit(143)))
    time.sleep(120)
else:
    pathlib.Path(sys.argv[1]).write_text(str(os.getpid()))
    time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_stop_request_while_torchrun_stops_the_killed_ranks_sibling_spares_it(tmp_path):
    """The stop request comes once torchrun has reaped the killed rank (no zombie to see) and
    is still stopping its sibling: the node is spared, torchrun reports the SIGKILL."""
    pytest.importorskip("torch")
    script, pid_file = tmp_path / "train.py", tmp_path / "rank0.pid"
    script.write_text(KILLED_AND_SLOW_SIBLING)
    log_dir = node_log_dir(tmp_path, 0, "n1")
    argv = [
        sys.executable, FAST_EXIT, "-m", "torch.distributed.run", "--standalone",
        "--nproc-per-node=2", f"--log-dir={log_dir}", "--redirects=3",
        "--run-path", "--start-method=fork", RANK_ENTRY, str(script), str(pid_file),
    ]  # fmt: skip
    root = str(Path(__file__).resolve().parents[2])
    exits = agent_plan.rank_exits_dir(str(log_dir))
    env = dict(
        os.environ, PYTHONPATH=root, OMP_NUM_THREADS="1", PYTORCH_NVML_BASED_CUDA_CHECK="1",
        SNRUN_RANK_EXITS=exits,
    )  # fmt: skip
    env.pop("SNRUN_JOB_DIR", None)

    def request_once_reaped() -> None:
        while not pid_file.exists() or not pid_file.read_text():
            time.sleep(0.02)
        pid = int(pid_file.read_text())
        while os.path.exists(f"/proc/{pid}"):  # alive or a zombie: not reaped yet
            time.sleep(0.02)
        failfast.request_stop(tmp_path, 0, ["n0"], "n0 failed first")

    threading.Thread(target=request_once_reaped, daemon=True).start()
    sigs = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
    saved = {s: signal.getsignal(s) for s in sigs}
    try:
        done = run_child(argv, env, stop=failfast.StopWatch(tmp_path, 0, "n1"), exits=exits)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    assert done.stopped is None and done.code == 1, done.tail[-2000:]
    ranks = parse_failures(done.tail)
    assert {r["rank"]: r.get("signal") for r in ranks}[0] == "SIGKILL", ranks
    # the agent saw rank 0 die itself (a zombie with its signal, or gone without a mark);
    # rank 1 ended with an exit code (its failure mark): not a death
    (death,) = done.deaths
    assert (death["rank"], death["local_rank"], death["pid"]) == (0, 0, int(pid_file.read_text()))
    assert death["signal"] in ("SIGKILL", "unknown")


def test_a_death_torchruns_report_leaves_out_is_recorded_by_the_agent(tmp_path: Path) -> None:
    """Under load torchrun's report named only the killed rank's sibling (stopped by SIGTERM a
    moment later): the rank the agent saw die is recorded too, first, with what is known."""
    report = [{"rank": 3, "local_rank": 1, "exit_code": -15, "signal": "SIGTERM", "first": True}]
    seen = [
        {"rank": 2, "local_rank": 0, "exit_code": None, "signal": "unknown", "pid": 41},
        {"rank": 3, "local_rank": 1, "exit_code": -9, "signal": "SIGKILL", "pid": 42},
    ]
    (missing,) = unreported(seen, report)  # rank 3 is the report's: its signal is torchrun's
    assert missing["rank"] == 2
    log_dir = node_log_dir(tmp_path, 0, "n1")
    folder = log_dir / "run_x" / "attempt_0" / "0"
    folder.mkdir(parents=True)
    (written,) = record_signal_deaths(
        tmp_path, attempt=0, node="n1", ranks=[*report, missing],
        pids={3: 42, 2: 41}, last_seen={41: 1000.0, 42: 1005.0}, fallback=2000.0,
    )  # fmt: skip
    assert (written["rank"], written["died"], written["signal"]) == (2, 1000.0, "unknown")
    assert "killed by a signal" in written["error"] and "torchrun reaped it" in written["error"]
    assert not (folder / "error.json").exists()
    # snrun status finds its folder by node and local rank (no node record here: rank unknown)
    err = first_error(tmp_path, 0, ledger.rank_failures(tmp_path)[0])
    assert err is not None and (err["rank"], err["log"]) == (2, str(folder / "stderr.log"))
    assert "killed by a signal" in err["message"]
    assert unreported(seen, []) == seen  # no report at all: both


def test_a_dying_rank_is_not_seen_alive() -> None:
    """/proc/PID/stat as the agent reads it: a task whose flags say PF_EXITING is being torn
    down (its sockets close before it is a zombie, so a peer on another node raises first): not
    alive, so the rank's last sighting stays before any peer's error about it."""
    from slurm_supernode.runtime.proc_tree import EXITING, stat_exit, zombie_signal

    def stat(state: str, flags: int, status: int = 0) -> str:
        rest = [state, "1", "2", "2", "0", "-1", str(flags)] + ["0"] * 44 + [str(status)]
        return "4242 (python3 (rank 1)) " + " ".join(rest)

    assert stat_exit(stat("S", 0x400140)) is None  # a sleeping rank: alive
    assert stat_exit(stat("R", 0x400144)) == EXITING  # SIGKILLed, mm being freed
    assert stat_exit(stat("D", 0x40044C)) == EXITING
    assert stat_exit(stat("Z", 0x40844C, status=9)) == signal.SIGKILL
    assert stat_exit(stat("Z", 0x40844C, status=3 << 8)) == 0  # exit(3)
    assert stat_exit("garbage") is None
    assert zombie_signal(os.getpid()) is None  # this very process, alive, read for real


def test_a_rank_stopped_again_while_it_prints_its_traceback_has_left_its_mark(tmp_path: Path):
    """Seen in CI: torchrun stopped a rank (SignalException), a second SIGTERM raised again
    inside ``traceback.print_exc``, and the rank was gone without a mark: counted as killed and
    named before the rank whose error stopped it. The mark and the ledger record come first."""

    script = tmp_path / "train.py"
    script.write_text(
        "import sys\n"
        "class Stopped:\n"
        "    def write(self, text):\n"
        "        raise RuntimeError('stopped again while printing')\n"
        "    def flush(self): pass\n"
        "sys.stderr = Stopped()\n"
        "raise ValueError('first failure')\n"
    )
    exits = tmp_path / "rank-exits"
    job = tmp_path / "job"
    job.mkdir()
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, SNRUN_RANK_EXITS=str(exits), RANK="4", LOCAL_RANK="0",
               PYTHONPATH=root, SNRUN_JOB_DIR=str(job), SNRUN_NODE="n6")  # fmt: skip
    proc = subprocess.Popen([sys.executable, RANK_ENTRY, str(script)], env=env,
                            stderr=subprocess.PIPE)  # fmt: skip
    proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert (exits / f"{proc.pid}.failed").exists()
    records = [r for r in ledger.read(job) if r["event"] == "rank_failed"]
    assert [(r["rank"], r["error"]) for r in records] == [(4, "ValueError: first failure")]
