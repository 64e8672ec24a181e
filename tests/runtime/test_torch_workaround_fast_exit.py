"""torchrun's entry (runtime/torch_workarounds/fast_exit.py) leaves without Python's teardown
but loses nothing:
the exit status Python would give, an uncaught exception's traceback (torchrun's failure
report), atexit handlers, buffered stdout; and with a real torchrun the agent still gets the
failure report, the failing rank's error file and the rank's teed output."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_supernode.forensics.torchrun_report import parse_failures
from slurm_supernode.runtime.agent_plan import FAST_EXIT, RANK_ENTRY
from slurm_supernode.runtime.torchrun_child import run_child

FAKE = """
import atexit, os, sys
def _bye():
    open(os.environ["MARK"], "w").write("atexit ran")
atexit.register(_bye)
def main():
    print("buffered line")  # stdout is a pipe: block-buffered, flushed only at exit
    print("path0", sys.path[0])
    print("argv", sys.argv[1:])
    how = os.environ["HOW"]
    if how == "raise":
        raise RuntimeError("launcher failed")
    if how == "interrupt":
        raise KeyboardInterrupt
    if how == "exit3":
        sys.exit(3)
    if how == "exitmsg":
        sys.exit("bad arguments")
    if how == "return":
        return 5
"""


def _fake(tmp_path: Path, how: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    (tmp_path / "fakelauncher.py").write_text(FAKE)
    mark = tmp_path / "mark"
    env = dict(os.environ, PYTHONPATH=str(tmp_path), HOW=how, MARK=str(mark))
    argv = [sys.executable, FAST_EXIT, "-m", "fakelauncher", "--x", "y"]
    cwd = tmp_path / "work"
    cwd.mkdir()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    return proc, mark


@pytest.mark.parametrize(
    ("how", "code", "stderr"),
    [
        ("none", 0, None),
        ("exit3", 3, None),
        ("return", 5, None),
        ("exitmsg", 1, "bad arguments"),
        ("raise", 1, "RuntimeError: launcher failed"),
        ("interrupt", -signal.SIGINT, "KeyboardInterrupt"),
    ],
)
def test_the_exit_status_output_and_atexit_are_pythons(tmp_path, how, code, stderr):
    proc, mark = _fake(tmp_path, how)
    assert proc.returncode == code, proc.stderr
    assert "buffered line" in proc.stdout and "argv ['--x', 'y']" in proc.stdout
    # python -m's path: the working directory first, not snrun's runtime folder
    assert f"path0 {tmp_path / 'work'}" in proc.stdout
    assert mark.read_text() == "atexit ran"
    if stderr:
        assert stderr in proc.stderr
    if how == "raise":
        assert "Traceback (most recent call last)" in proc.stderr
    else:
        assert "Traceback" not in proc.stderr or how == "interrupt"


def test_without_a_module_it_says_how_to_call_it(tmp_path):
    proc = subprocess.run([sys.executable, FAST_EXIT, "x.py"], capture_output=True, text=True)
    assert proc.returncode == 2 and "usage: fast_exit.py -m MODULE" in proc.stderr


TRAIN = """
import os
print("rank output", os.environ["RANK"], flush=True)
raise RuntimeError("injected in rank " + os.environ["RANK"])
"""


def test_a_real_torchrun_still_reports_its_failed_rank(tmp_path):
    """The agent's torchrun command (forked workers, its log options): exit 1, the failure
    report the agent parses into node_exit's ranks, the rank's error file and teed output."""
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    logs = tmp_path / "logs"
    argv = [
        sys.executable, FAST_EXIT, "-m", "torch.distributed.run", "--standalone",
        "--nproc-per-node=1", f"--log-dir={logs}", "--redirects=3", "--tee=3",
        "--run-path", "--start-method=fork", RANK_ENTRY, str(script),
    ]  # fmt: skip
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=root, OMP_NUM_THREADS="1", PYTORCH_NVML_BASED_CUDA_CHECK="1")
    out = tmp_path / "stdout"
    with out.open("w") as fh:
        # the agent's own runner, stdout to a file as in a Slurm step
        stdout_fd = os.dup(1)
        os.dup2(fh.fileno(), 1)
        try:
            done = run_child(argv, env)
        finally:
            os.dup2(stdout_fd, 1)
            os.close(stdout_fd)
    assert done.code == 1, done.tail[-2000:]
    assert "Root Cause (first observed failure)" in done.tail
    (rank,) = parse_failures(done.tail)
    assert (rank["rank"], rank["exit_code"], rank["first"]) == (0, 1, True)
    (error_file,) = logs.glob("**/attempt_0/0/error.json")
    assert "injected in rank 0" in error_file.read_text()
    assert "rank output 0" in out.read_text()
