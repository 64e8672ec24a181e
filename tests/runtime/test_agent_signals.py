"""USR2 (time limit near) reaches a training script that runs in workers forked from torchrun.

slurmstepd signals every process of a step; torchrun dies of SIGUSR2 and its forked workers die
with it before they checkpoint, unless the agent starts torchrun with USR1/USR2 ignored. Runs a
real torchrun (CPU); the cluster version is tests/integration/test_resubmission.py's time-limit
test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import signal, sys, time
stop = []
signal.signal(signal.SIGUSR2, lambda *_: stop.append(1))
print("ready", flush=True)
for _ in range(1200):
    if stop:
        time.sleep(1.0)  # writing the checkpoint takes a moment
        print("checkpointed", flush=True)
        sys.exit(0)
    time.sleep(0.05)
sys.exit(3)
"""

DRIVER = """
import os, sys
from slurm_supernode.runtime.torchrun_child import run_child
argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=1",
        "--run-path", "--start-method=fork", sys.argv[2]]
env = dict(os.environ, OMP_NUM_THREADS="1")
code = run_child(argv, env, shield_launcher=sys.argv[1] == "1").code
print("CODE", code, flush=True)
"""


def _run(tmp_path: Path, shield: bool) -> str:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = tmp_path / f"out{int(shield)}.txt"
    with open(out, "w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-c", DRIVER, "1" if shield else "0", str(script)],
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            start_new_session=True,  # its own process group, like a step's task
        )
        deadline = time.monotonic() + 120
        while "ready" not in out.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGUSR2)  # what slurmstepd does to a step
        proc.wait(timeout=120)
    return out.read_text()


def test_forked_workers_get_usr2_and_checkpoint_when_torchrun_is_shielded(tmp_path):
    text = _run(tmp_path, shield=True)
    assert "checkpointed" in text and "CODE 0" in text, text[-2000:]


def test_without_the_shield_torchrun_dies_of_usr2(tmp_path):
    """The failure the shield prevents (so the test above can fail)."""
    text = _run(tmp_path, shield=False)
    assert "CODE 140" in text and "checkpointed" not in text, text[-2000:]
