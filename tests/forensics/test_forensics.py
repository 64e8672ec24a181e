"""Per-rank logs, error files, status evidence, rank processes and the attach command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slurm_supernode.chain.ledger import current_job_id
from slurm_supernode.forensics.env import ERROR_HOOK_DIR, forensics_env
from slurm_supernode.forensics.logs import (
    first_error,
    merged,
    rank_logs,
    read_error_file,
)
from slurm_supernode.forensics.report import attempt_evidence, evidence_lines, last_failure
from slurm_supernode.forensics.stacks import rank_processes
from slurm_supernode.slurm.attach import attach_argv

ROOT = Path(__file__).resolve().parents[2]


def fake_attempt(job_dir: Path, attempt: int, nodes: dict[str, int], nproc: int = 2) -> None:
    """What the agents and torchrun leave for one attempt: env records and rank folders."""
    for node, node_rank in nodes.items():
        rec = {"argv": ["python", f"--nproc-per-node={nproc}"], "node_rank": node_rank}
        (job_dir / "env").mkdir(parents=True, exist_ok=True)
        (job_dir / "env" / f"{node}.{attempt}.json").write_text(json.dumps(rec))
        for local in range(nproc):
            d = (
                job_dir
                / "logs"
                / f"attempt{attempt}"
                / node
                / "none_abc"
                / "attempt_0"
                / str(local)
            )
            d.mkdir(parents=True)
            rank = node_rank * nproc + local
            (d / "stdout.log").write_text(f"out {rank}\nout2 {rank}\n")
            (d / "stderr.log").write_text(f"err {rank}\n")


def error_json(message: str, stamp: int) -> str:
    return json.dumps(
        {"message": {"message": message, "extraInfo": {"py_callstack": "tb", "timestamp": stamp}}}
    )


def test_rank_logs_are_numbered_and_merged_with_prefixes(tmp_path: Path) -> None:
    fake_attempt(tmp_path, 3, {"n5": 1, "n4": 0})
    logs = rank_logs(tmp_path, 3)
    assert [(r.rank, r.node, r.local_rank) for r in logs] == [
        (0, "n4", 0), (1, "n4", 1), (2, "n5", 0), (3, "n5", 1),
    ]  # fmt: skip
    lines = list(merged(logs[2:3], ("stdout", "stderr"), None))
    assert lines == ["[rank 2] out 2", "[rank 2] out2 2", "[rank 2 err] err 2"]
    assert list(merged(logs[:1], ("stdout",), 1)) == ["[rank 0] out2 0"]
    assert rank_logs(tmp_path, 9) == []


def test_first_failing_rank_from_error_files(tmp_path: Path) -> None:
    fake_attempt(tmp_path, 0, {"n0": 0, "n1": 1})
    base = tmp_path / "logs" / "attempt0"
    late = base / "n0" / "none_abc" / "attempt_0" / "0" / "error.json"
    early = base / "n1" / "none_abc" / "attempt_0" / "1" / "error.json"
    early.write_text(error_json("ValueError: bad lr: 7", 100))
    time.sleep(0.01)
    late.write_text(error_json("RuntimeError: Connection closed by peer", 100))  # same second
    err = first_error(tmp_path, 0)
    assert err is not None
    assert (err["rank"], err["node"], err["type"], err["message"]) == (
        3,
        "n1",
        "ValueError",
        "bad lr: 7",
    )
    assert err["log"] == str(early.parent / "stderr.log") and err["failed_ranks"] == 2
    # the older torch format: a plain string message
    legacy = tmp_path / "legacy.json"
    legacy.write_text(json.dumps({"message": "Signal 9 (SIGKILL) received", "timestamp": 5}))
    assert read_error_file(legacy) == {
        "type": "", "message": "Signal 9 (SIGKILL) received", "timestamp": 5, "traceback": None,
    }  # fmt: skip
    (tmp_path / "torn.json").write_text('{"message": ')
    assert read_error_file(tmp_path / "torn.json") is None


def test_status_evidence_says_the_cause_and_where(tmp_path: Path) -> None:
    fake_attempt(tmp_path, 0, {"n0": 0})
    folder = tmp_path / "logs" / "attempt0" / "n0" / "none_abc" / "attempt_0" / "1"
    (folder / "error.json").write_text(error_json("KeyError: 'lr'", 1))
    (tmp_path / "logs" / "attempt0" / "stacks").mkdir()
    (tmp_path / "logs" / "attempt0" / "stacks" / "rank1.txt").write_text("x")
    a = attempt_evidence(tmp_path, {"attempt": 0, "cause": "hang"})
    assert a["error"]["message"] == "'lr'" and a["stacks"].endswith("attempt0/stacks")
    text = "\n".join(evidence_lines(a))
    assert "cause: rank 1 on n0: KeyError: 'lr'" in text
    assert f"log  : {folder / 'stderr.log'}" in text and "stacks:" in text
    ok = attempt_evidence(tmp_path, {"attempt": 0, "cause": "success"})
    assert ok["error"] is None
    # a job stopped by a signal: the ranks' SignalException is no cause to show
    (folder / "error.json").write_text(error_json("SignalException: Process 7 got signal: 15", 2))
    for cause in ("cancelled", "preemption", "time_limit"):
        stopped = attempt_evidence(tmp_path, {"attempt": 0, "cause": cause})
        assert stopped["error"] is None and "cause:" not in "\n".join(evidence_lines(stopped))
    assert attempt_evidence(tmp_path, {"attempt": 0, "cause": "app_error"})["error"] is not None


def test_last_failure_names_the_latest_attempts_failing_rank(tmp_path: Path) -> None:
    """The one-line error of a failed doctor or bench job: the latest attempt with an error."""
    assert last_failure(tmp_path) is None
    fake_attempt(tmp_path, 0, {"n0": 0})
    fake_attempt(tmp_path, 1, {"n0": 0, "n1": 1})
    old = tmp_path / "logs" / "attempt0" / "n0" / "none_abc" / "attempt_0" / "0" / "error.json"
    old.write_text(error_json("KeyError: 'old'", 1))
    assert last_failure(tmp_path) == f"rank 0 on n0: KeyError: 'old' (log {old.parent}/stderr.log)"
    new = tmp_path / "logs" / "attempt1" / "n1" / "none_abc" / "attempt_0" / "1" / "error.json"
    new.write_text(error_json("RuntimeError: NCCL timeout", 2))
    assert last_failure(tmp_path).startswith("rank 3 on n1: RuntimeError: NCCL timeout (log ")


def test_error_hook_writes_torchelastic_error_file(tmp_path: Path) -> None:
    """A script without @record: its uncaught exception lands in TORCHELASTIC_ERROR_FILE in
    torch's format; the system's own sitecustomize still runs."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import builtins; builtins.OTHER_SITE = 1\n")
    script = tmp_path / "s.py"
    script.write_text("import builtins\nassert builtins.OTHER_SITE\nraise KeyError('lr')\n")
    err = tmp_path / "error.json"
    env = dict(os.environ, TORCHELASTIC_ERROR_FILE=str(err))
    env["PYTHONPATH"] = forensics_env({"PYTHONPATH": str(other)}, str(tmp_path), "ascend")[
        "PYTHONPATH"
    ]
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert out.returncode == 1 and "KeyError: 'lr'" in out.stderr  # traceback still printed
    got = read_error_file(err)
    assert got is not None and (got["type"], got["message"]) == ("KeyError", "'lr'")
    assert "raise KeyError" in got["traceback"]
    err.write_text(error_json("ValueError: from @record", 1))  # @record wrote first: kept
    subprocess.run([sys.executable, str(script)], env=env, capture_output=True)
    assert read_error_file(err)["message"] == "from @record"


def test_forensics_env_nccl_names_follow_torch_and_user_wins() -> None:
    new = forensics_env({}, "/j/logs/attempt0/n0", "nvidia", (2, 13))
    assert new["TORCH_FR_BUFFER_SIZE"] == "2000" and "TORCH_NCCL_TRACE_BUFFER_SIZE" not in new
    assert new["TORCH_FR_DUMP_TEMP_FILE"] == "/j/logs/attempt0/n0/nccl_trace_rank_"
    assert new["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] == "/j/logs/attempt0/n0/nccl_pipe_rank_"
    old = forensics_env({}, "/x", "nvidia", (2, 4))
    assert old["TORCH_NCCL_TRACE_BUFFER_SIZE"] == "2000" and "TORCH_FR_BUFFER_SIZE" not in old
    mine = forensics_env({"TORCH_NCCL_TRACE_BUFFER_SIZE": "0"}, "/x", "nvidia", (2, 13))
    assert "TORCH_FR_BUFFER_SIZE" not in mine and "TORCH_NCCL_TRACE_BUFFER_SIZE" not in mine
    ascend = forensics_env({"PYTHONPATH": "/a"}, "/x", "ascend")
    assert ascend == {"PYTHONPATH": f"{ERROR_HOOK_DIR}:/a"}


def test_rank_processes_are_the_children_of_the_jobs_torchrun() -> None:
    """A stand-in torchrun (its argv names torch.distributed.run) with two workers that carry
    no RANK (forked workers): ranks from --node-rank and the order; a worker's own child
    (a data loader) is not a rank."""
    env = dict(os.environ, SLURM_JOB_ID="987654", SLURMD_NODENAME="nX")
    worker = (
        "import subprocess, sys, time; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); time.sleep(30)"
    )
    launcher = (
        "import subprocess, sys, time; "
        f"ws = [subprocess.Popen([sys.executable, '-c', {worker!r}]) for _ in range(2)]; "
        "time.sleep(30)"
    )
    argv = [sys.executable, "-c", launcher, "torch.distributed.run", "--node-rank=1"]
    proc = subprocess.Popen([*argv, "--nproc-per-node=2"], env=env)
    try:
        deadline = time.monotonic() + 60  # both workers started (seconds on a loaded machine)
        while len(found := rank_processes("987654", "nX")) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [(p.rank, p.local_rank) for p in found] == [(2, 0), (3, 1)]
        assert all(p.pid != proc.pid for p in found)
        assert rank_processes("987654", "nY") == [] and rank_processes("987653", None) == []
    finally:
        subprocess.run(["pkill", "-KILL", "-P", str(proc.pid)], check=False)
        proc.kill()


def test_attach_command_and_current_job(tmp_path: Path) -> None:
    assert attach_argv(12, ["n3"], ["hostname"]) == [
        "srun", "--jobid=12", "--overlap", "--nodelist=n3", "--nodes=1", "--ntasks=1",
        "--ntasks-per-node=1", "--kill-on-bad-exit=0", "hostname",
    ]  # fmt: skip
    assert "--pty" in attach_argv(12, ["n3", "n4"], ["bash"], pty=True)
    with pytest.raises(ValueError):
        attach_argv(12, [], ["x"])
    (tmp_path / "job.json").write_text(json.dumps({"job_ids": [40]}))
    (tmp_path / "ledger.jsonl").write_text(
        '{"event":"resubmitted","job_id":40,"new_job_id":41,"time":1}\n'
    )
    assert current_job_id(tmp_path) == 41


def test_logs_cli(tmp_path: Path) -> None:
    job_dir = tmp_path / "jobs" / "j1"
    (job_dir).mkdir(parents=True)
    (job_dir / "plan.json").write_text("{}")
    fake_attempt(job_dir, 0, {"n0": 0})
    fake_attempt(job_dir, 1, {"n0": 0})
    (
        job_dir / "logs" / "attempt1" / "n0" / "none_abc" / "attempt_0" / "1" / "stdout.log"
    ).write_text("new 1\n")

    def logs(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "slurm_supernode", "logs", str(job_dir), *args],
            capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )  # fmt: skip

    assert logs("--rank", "1", "--stream", "stdout").stdout == "[rank 1] new 1\n"
    assert logs("--rank", "1", "--attempt", "0", "--stream", "stdout").stdout.splitlines() == [
        "[rank 1] out 1", "[rank 1] out2 1",
    ]  # fmt: skip
    bad = logs("--attempt", "7")
    assert bad.returncode == 2 and "attempts with logs: 0, 1" in bad.stderr
    nope = logs("--rank", "9")
    assert nope.returncode == 2 and "--rank: no such rank" in nope.stderr
    (job_dir / "ledger.jsonl").write_text('{"event":"final","state":"COMPLETED","time":1}\n')
    followed = logs("--follow", "--rank", "0", "--stream", "stderr")
    assert followed.returncode == 0
    assert followed.stdout.splitlines() == ["== attempt 1 ==", "[rank 0 err] err 0"]


def test_hang_rule_heartbeat_first_then_startup_then_silence() -> None:
    from slurm_supernode.forensics.hang import hang_timeout, is_hung

    inf = float("inf")
    # a heartbeat of this attempt is the precise signal, whatever the logs do
    assert is_hung(100, 0, 10, inf, heartbeat=85, activity=99)
    assert not is_hung(100, 0, 10, inf, heartbeat=95, activity=0)
    # before one: silence of output and CPU for the timeout
    assert is_hung(100, 0, 10, inf, heartbeat=None, activity=85)
    assert not is_hung(100, 0, 10, inf, heartbeat=-5, activity=95)  # an old heartbeat
    assert not is_hung(8, 0, 10, inf, heartbeat=None, activity=0)  # counted from the start
    # a startup grace that is set: no first heartbeat within it
    assert is_hung(31, 0, 600, 30, heartbeat=None, activity=31)
    assert not is_hung(29, 0, 0.3, 30, heartbeat=None, activity=0)
    assert not is_hung(1e9, 0, 0, inf, heartbeat=None, activity=0)  # 0: off
    assert hang_timeout(None, 0.0) == 1800.0 and hang_timeout(0.0, 60.0) == 0.0
    assert hang_timeout(None, 60.0) == 60.0 and hang_timeout(15.0, 60.0) == 15.0


def test_activity_is_the_newest_log_or_cpu_mark(tmp_path: Path) -> None:
    from slurm_supernode.forensics.hang import last_activity, start_cpu_watch

    fake_attempt(tmp_path, 2, {"n0": 0})
    out = next((tmp_path / "logs" / "attempt2").rglob("stdout.log"))
    os.utime(out, (500, 500))
    for p in (tmp_path / "logs" / "attempt2").rglob("*.log"):
        if p != out:
            os.utime(p, (100, 100))
    assert last_activity(tmp_path, 2, since=50) == 500
    stacks = tmp_path / "logs" / "attempt2" / "stacks"
    stacks.mkdir()
    (stacks / "rank0.txt").write_text("x")  # our own dumps are no progress of the job
    assert last_activity(tmp_path, 2, since=50) == 500
    # the CPU mark: touched while the watched processes burn CPU, not while they sleep
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        marks = {}
        for name, proc in (("busy", busy), ("idle", idle)):
            mark = tmp_path / name / "cpu"
            stop = start_cpu_watch(lambda p=proc: [p.pid], mark)
            time.sleep(0.1)
            marks[name] = (mark, stop)
        # the first look is 5 s after the start; a loaded machine may start the burner late
        deadline = time.monotonic() + 120
        while not marks["busy"][0].exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert marks["busy"][0].exists() and not marks["idle"][0].exists()
    finally:
        for _, stop in marks.values():
            stop.set()
        busy.kill()
        idle.kill()


def test_stack_dumps_of_several_nodes_come_back_in_rank_order() -> None:
    from slurm_supernode.forensics.stacks import ranks_in_order

    labelled = "\n".join([
        "1: == rank 2 (local rank 0, node n1, pid 9) ==",
        "0: == rank 0 (local rank 0, node n0, pid 7) ==",
        "1: Thread 9 (active): MainThread",
        "0: Thread 7 (active): MainThread",
        "1:     main (t.py:3)",
        "0:     main (t.py:1)",
        "0: == rank 1 (local rank 1, node n0, pid 8) ==",
        "0: Thread 8 (idle)",
        "1: == NCCL flight recorder dump: /tmp/fr2 ==",
    ])  # fmt: skip
    assert ranks_in_order(labelled).splitlines() == [
        "== rank 0 (local rank 0, node n0, pid 7) ==", "Thread 7 (active): MainThread",
        "    main (t.py:1)",
        "== rank 1 (local rank 1, node n0, pid 8) ==", "Thread 8 (idle)",
        "== rank 2 (local rank 0, node n1, pid 9) ==", "Thread 9 (active): MainThread",
        "    main (t.py:3)",
        "== NCCL flight recorder dump: /tmp/fr2 ==",
    ]  # fmt: skip
    assert ranks_in_order("10: == rank 10 (x) ==\n 2: == rank 2 (y) ==\n").splitlines() == [
        "== rank 2 (y) ==", "== rank 10 (x) ==",
    ]  # fmt: skip
