"""`snrun top` as a person runs it: in a terminal (a pty), redrawn, left with q or Ctrl-C, the
terminal given back (alternate screen left, cursor shown). Waits on what the screen shows,
never on a fixed sleep."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slurm_supernode.chain import ledger
from tests.observe.attempt_fixture import write_attempt

LEAVE = b"\x1b[?25h\x1b[?1049l"
DEADLINE_S = 60  # the machine may be loaded: a generous bound, left as soon as the screen shows


def job_dir(tmp_path: Path) -> Path:
    d = tmp_path / "job"
    d.mkdir()
    (d / "plan.json").write_text("{}")
    ledger.append(d, "attempt_start", attempt=0, job_id=4242, nodes="sn0-n[0-1],sn1-n[0-1]")
    write_attempt(d)
    return d


def read_until(fd: int, want: bytes, seen: bytearray) -> bool:
    end = time.monotonic() + DEADLINE_S
    while want not in seen and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return want in seen


def exit_draining(proc: subprocess.Popen, fd: int, seen: bytearray) -> int | None:
    """The exit status, reading the terminal meanwhile: a child whose last frames fill the pty
    would otherwise block on its write while the test waits for it."""
    end = time.monotonic() + DEADLINE_S
    while proc.poll() is None and time.monotonic() < end:
        if select.select([fd], [], [], 0.2)[0]:
            try:
                seen += os.read(fd, 65536)
            except OSError:
                break
    return proc.wait(timeout=max(end - time.monotonic(), 1.0))


def run_top(job: Path):
    main_fd, child_fd = pty.openpty()
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "TERM": "xterm", "COLUMNS": "150", "LINES": "40"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "slurm_supernode", "top", str(job), "-d", "0.5"],
        stdin=child_fd, stdout=child_fd, stderr=child_fd, env=env, close_fds=True,
    )  # fmt: skip
    os.close(child_fd)
    return proc, main_fd


@pytest.mark.parametrize("leave", ["q", "ctrl-c"])
def test_live_view_redraws_and_leaves_cleanly(tmp_path, leave):
    proc, fd = run_top(job_dir(tmp_path))
    seen = bytearray()
    try:
        assert read_until(fd, b"snrun top  job 4242", seen), bytes(seen)[-2000:]
        first = seen.count(b"snrun top  job 4242")
        assert read_until(fd, b"q quits", seen)
        # a second frame: redrawn, not printed once
        end = time.monotonic() + DEADLINE_S
        while seen.count(b"snrun top  job 4242") == first and time.monotonic() < end:
            if select.select([fd], [], [], 1.0)[0]:
                seen += os.read(fd, 65536)
        assert seen.count(b"snrun top  job 4242") > first
        assert b"\x1b[31m" in seen  # the slow node in red
        if leave == "q":
            os.write(fd, b"q")
        else:
            proc.send_signal(signal.SIGINT)
        assert exit_draining(proc, fd, seen) == 0
        read_until(fd, LEAVE, seen)
        assert LEAVE in seen and b"Traceback" not in seen
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(fd)
