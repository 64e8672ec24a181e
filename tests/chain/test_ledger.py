from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from slurm_supernode.chain import ledger


def _writer(job_dir: str, who: int, n: int) -> None:
    for i in range(n):
        ledger.append(Path(job_dir), "node_exit", attempt=who, node=f"w{who}", seq=i)


def test_append_and_fold(tmp_path: Path) -> None:
    ledger.append(tmp_path, "attempt_start", attempt=0, job_id=7, nodes="n[0-3]")
    ledger.append(tmp_path, "node_exit", attempt=0, job_id=7, node="n0", exit_code=1)
    ledger.append(
        tmp_path,
        "attempt_end",
        attempt=0,
        job_id=7,
        exit_code=1,
        cause="app_error",
        action="restart",
        detail="x",
        progress="step 5",
    )
    ledger.append(tmp_path, "attempt_start", attempt=1, job_id=7, nodes="n[0-3]")
    chain = ledger.fold(ledger.read(tmp_path))
    assert [a.attempt for a in chain.attempts] == [0, 1]
    first = chain.attempts[0]
    assert (first.cause, first.action, first.progress) == ("app_error", "restart", "step 5")
    assert first.node_exits == {"n0": 1}
    assert chain.attempts[1].end is None
    assert chain.job_ids == [7]
    assert ledger.next_attempt(tmp_path) == 2


def test_sixteen_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, 25)) for w in range(16)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    records = list(ledger.read(tmp_path))
    assert len(records) == 16 * 25
    seen = {(r["node"], r["seq"]) for r in records}
    assert len(seen) == 16 * 25
    # every line is one complete JSON record
    lines = ledger.ledger_path(tmp_path).read_text().splitlines()
    assert len(lines) == 16 * 25


def test_writer_killed_mid_write_leaves_ledger_readable(tmp_path: Path) -> None:
    ledger.append(tmp_path, "attempt_start", attempt=0, job_id=1)
    # A torn line, as a writer killed in the middle of os.write would leave.
    with open(ledger.ledger_path(tmp_path), "a") as fh:
        fh.write('{"event": "node_exit", "attempt": 0, "no')
    # A real process killed while appending in a loop.
    code = (
        "import sys; from pathlib import Path; from slurm_supernode.chain import ledger\n"
        "i = 0\n"
        "while True:\n"
        "    ledger.append(Path(sys.argv[1]), 'node_exit', attempt=0, node='k', seq=i); i += 1\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=os.getcwd())
    # Kill it once it is appending (a fixed sleep lost the race on a loaded machine: the child
    # had not finished importing), then a little later, in the middle of its loop.
    path = ledger.ledger_path(tmp_path)
    deadline = time.monotonic() + 60
    while path.read_text().count('"node":"k"') < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    ledger.append(tmp_path, "attempt_end", attempt=0, job_id=1, exit_code=0, cause="success")
    records = list(ledger.read(tmp_path))
    assert records[0]["event"] == "attempt_start"
    assert records[-1]["event"] == "attempt_end"
    seqs = [r["seq"] for r in records if r.get("node") == "k"]
    assert seqs == list(range(len(seqs))) and len(seqs) > 0
    chain = ledger.fold(records)
    assert chain.attempts[0].cause == "success"


def test_fold_keeps_which_containers_failed_and_which_never_started() -> None:
    recs = [
        {"event": "attempt_start", "attempt": 0, "job_id": 7, "nodes": "n[0-1]", "time": 1.0},
        {"event": "node_exit", "attempt": 0, "job_id": 7, "node": "n1", "exit_code": 1,
         "container_failed": True, "error": "runc run failed", "time": 2.0},
        {"event": "node_exit", "attempt": 0, "job_id": 7, "node": "n0", "exit_code": 137,
         "stopped": "n1 failed first", "container_unstarted": True, "time": 2.5},
    ]  # fmt: skip
    (attempt,) = ledger.fold(recs).attempts
    assert attempt.container_failed == {"n1": "runc run failed"}
    assert attempt.container_unstarted == ["n0"]
