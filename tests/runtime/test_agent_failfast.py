"""The agent's side of failing fast (runtime/failfast.py, agent.run_child): on the supervisor's
stop request an agent stops its own torchrun and reports that it did; the failing node's agent
leaves its torchrun alone. Fake launchers stand in for torchrun (a parent with a worker child);
the last test runs two real torchruns, one waiting in torchelastic's exit barrier."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from slurm_supernode.runtime import failfast
from slurm_supernode.runtime.torchrun_child import run_child

# A launcher with one worker: on SIGTERM it stops its worker and exits 7, as torchrun does.
# It creates the file argv[1] once its worker runs.
WITH_WORKER = """
import pathlib, signal, subprocess, sys, time
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
def stop(*_):
    worker.terminate(); worker.wait(); sys.exit(7)
signal.signal(signal.SIGTERM, stop)
pathlib.Path(sys.argv[1]).touch()
while True:
    time.sleep(0.05)
"""
# A launcher whose workers are gone and that does not act on SIGTERM (torchrun in its exit
# barrier, inside a blocking store call).
DEAF_NO_WORKER = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ready", flush=True)
time.sleep(600)
"""
# Runs to its own end (exit 3) once the test lets it (a file appears).
ENDS_ITSELF = """
import os, sys, time
print("ready", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.02)
sys.exit(3)
"""


def _run(code: str, stop, *args: str):
    """run_child on a fake launcher; the signal handlers it installs are put back after."""
    sigs = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
    saved = {s: signal.getsignal(s) for s in sigs}
    try:
        return run_child([sys.executable, "-c", code, *args], dict(os.environ), stop=stop)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def test_the_stop_request_names_who_stops(tmp_path: Path) -> None:
    assert failfast.read_stop(tmp_path, 0) is None
    failfast.request_stop(tmp_path, 0, ["n1"], "n1 failed first")
    assert failfast.StopWatch(tmp_path, 0, "n1")() is None  # the failing node ends by itself
    request = failfast.StopWatch(tmp_path, 0, "n0")()
    assert request is not None and request.reason == "n1 failed first"
    assert failfast.StopWatch(tmp_path, 1, "n0")() is None  # another attempt's request
    (tmp_path / "stop" / "attempt2.json").write_text("{not json")
    assert failfast.read_stop(tmp_path, 2) is None


@pytest.mark.parametrize(
    ("value", "on"), [(None, True), ("1", True), ("0", False), ("off", False), ("false", False)]
)
def test_fail_fast_is_on_unless_turned_off(value: str | None, on: bool) -> None:
    environ = {} if value is None else {failfast.ENV: value}
    assert failfast.enabled(environ) is on


def test_a_launcher_with_live_workers_is_sent_sigterm(tmp_path: Path) -> None:
    """torchrun stops its ranks itself (SIGTERM): its exit code is kept."""
    ready = tmp_path / "ready"

    def request_once_ready() -> None:
        while not ready.exists():
            time.sleep(0.02)
        failfast.request_stop(tmp_path, 0, ["n1"], "n1 failed first")

    threading.Thread(target=request_once_ready, daemon=True).start()
    done = _run(WITH_WORKER, failfast.StopWatch(tmp_path, 0, "n0"), str(ready))
    assert (done.code, done.stopped) == (7, "n1 failed first")


def test_a_launcher_without_workers_is_killed(tmp_path: Path) -> None:
    """No rank left (torchrun waits in the exit barrier, deaf to SIGTERM): SIGKILL."""
    failfast.request_stop(tmp_path, 0, ["n1"], "n1 failed first")
    done = _run(DEAF_NO_WORKER, failfast.StopWatch(tmp_path, 0, "n0"))
    assert (done.code, done.stopped) == (128 + signal.SIGKILL, "n1 failed first")


def test_the_failing_nodes_launcher_is_left_to_end_by_itself(tmp_path: Path) -> None:
    failfast.request_stop(tmp_path, 0, ["n1"], "n1 failed first")
    go = tmp_path / "go"
    threading.Timer(0.5, go.touch).start()  # it would be killed at once if it were stopped
    done = _run(ENDS_ITSELF, failfast.StopWatch(tmp_path, 0, "n1"), str(go))
    assert (done.code, done.stopped) == (3, None)


TRAIN = """
import time, torch.distributed as dist
dist.init_process_group("gloo")
if dist.get_rank() == 1:
    time.sleep(0.5)
    raise RuntimeError("boom")
print("rank 0 finished", flush=True)
"""

NODE0 = """
import os, sys
from pathlib import Path
from slurm_supernode.runtime import failfast
from slurm_supernode.runtime.torchrun_child import run_child
job_dir, argv = Path(sys.argv[1]), sys.argv[2:]
done = run_child(argv, dict(os.environ), stop=failfast.StopWatch(job_dir, 0, "n0"))
print("RESULT", done.code, done.stopped, flush=True)
"""


def test_a_real_torchrun_in_the_exit_barrier_is_stopped(tmp_path: Path) -> None:
    """Two real torchruns (nnodes=2, forked workers): rank 1 raises after rank 0 finished, so
    node 0's torchrun waits in the exit barrier (300 s by itself). Once node 1's torchrun has
    failed, the stop request ends node 0's torchrun, whose agent reports it stopped."""
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    port = 20000 + os.getpid() % 20000

    def torchrun(node: int) -> list[str]:
        return [
            sys.executable, "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=1",
            f"--node-rank={node}", "--master-addr=127.0.0.1", f"--master-port={port}",
            "--start-method=fork", "--run-path", str(script),
        ]  # fmt: skip

    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=root, OMP_NUM_THREADS="1", PYTORCH_NVML_BASED_CUDA_CHECK="1")
    node0 = subprocess.Popen(
        [sys.executable, "-c", NODE0, str(tmp_path), *torchrun(0)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    node1 = subprocess.run(torchrun(1), env=env, capture_output=True, text=True, timeout=240)
    assert node1.returncode == 1, node1.stderr[-2000:]
    failfast.request_stop(tmp_path, 0, ["n1"], "n1 failed first")  # what the supervisor does
    out, _ = node0.communicate(timeout=120)  # the barrier alone would hold it 300 s
    assert "rank 0 finished" in out and "RESULT 137 n1 failed first" in out, out[-2000:]
