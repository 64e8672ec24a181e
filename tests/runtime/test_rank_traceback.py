"""A rank that dies of an exception leaves its traceback in its own stderr log (what `snrun
logs --rank R` shows) in both worker modes. Runs a real torchrun (CPU) with the agent's log
options; in forked mode torchrun's wrapper would hand the traceback to its summary only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_supernode.chain import ledger
from slurm_supernode.runtime.agent_plan import RANK_ENTRY

pytest.importorskip("torch")

SCRIPT = """
import os
def main():
    raise RuntimeError("injected in rank " + os.environ["RANK"])
if __name__ == "__main__":
    main()
"""


def rank_stderr(tmp_path: Path, mode: list[str]) -> str:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    logs = tmp_path / "logs"
    argv = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=1",
        f"--log-dir={logs}", "--redirects=3", "--tee=3", *mode, str(script),
    ]  # fmt: skip
    env = dict(os.environ, OMP_NUM_THREADS="1", SNRUN_JOB_DIR=str(tmp_path), SNRUN_NODE="n3")
    env["SNRUN_ATTEMPT"] = "2"
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode != 0
    (stderr_log,) = logs.glob("**/attempt_0/0/stderr.log")
    return stderr_log.read_text()


@pytest.mark.parametrize(
    "mode",
    [["--run-path", "--start-method=fork", RANK_ENTRY], []],
    ids=["forked", "spawned"],
)
def test_the_failing_ranks_traceback_is_in_its_own_stderr_log(tmp_path, mode):
    text = rank_stderr(tmp_path, mode)
    assert "Traceback (most recent call last)" in text, text
    assert "RuntimeError: injected in rank 0" in text and 'train.py", line 4, in main' in text
    if mode:  # forked: the rank also told the ledger at once, for the supervisor
        (rec,) = [r for r in ledger.read(tmp_path) if r["event"] == "rank_failed"]
        assert (rec["attempt"], rec["node"], rec["rank"]) == (2, "n3", 0)
        assert rec["error"] == "RuntimeError: injected in rank 0"
        assert rec["point"] == f"{tmp_path / 'train.py'}:4 in main"  # where, for decide


def test_forked_workers_without_the_entry_leave_it_empty(tmp_path):
    """What rank_entry.py is for (so the test above can fail)."""
    text = rank_stderr(tmp_path, ["--run-path", "--start-method=fork"])
    assert "RuntimeError" not in text


EXITS = """
import os, sys
sys.exit(int(os.environ["CODE"]))
"""


@pytest.mark.parametrize(("code", "recorded"), [("3", True), ("0", False)])
def test_a_forked_ranks_own_non_zero_exit_is_recorded(tmp_path, code, recorded):
    """sys.exit(3) in the script: recorded before the rank's process ends (its peers' errors
    about the closed connection come after it); exit 0 is no failure."""
    script = tmp_path / "train.py"
    script.write_text(EXITS)
    argv = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=1",
        "--run-path", "--start-method=fork", RANK_ENTRY, str(script),
    ]  # fmt: skip
    env = dict(os.environ, OMP_NUM_THREADS="1", SNRUN_JOB_DIR=str(tmp_path), SNRUN_NODE="n3")
    env |= {"SNRUN_ATTEMPT": "0", "CODE": code, "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    assert (proc.returncode != 0) is recorded, proc.stderr[-2000:]
    records = [r for r in ledger.read(tmp_path) if r["event"] == "rank_failed"]
    assert [r["error"] for r in records] == (["SystemExit: 3"] if recorded else [])


def test_a_forked_rank_imports_its_scripts_sibling_modules(tmp_path):
    """As `python train.py` does: the script's folder is first on sys.path (`from helper
    import X` beside train.py; runpy.run_path alone does not add it)."""
    (tmp_path / "helper.py").write_text("VALUE = 'sibling found'\n")
    script = tmp_path / "train.py"
    script.write_text("from helper import VALUE\nprint(VALUE, flush=True)\n")
    argv = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=1",
        "--run-path", "--start-method=fork", RANK_ENTRY, str(script),
    ]  # fmt: skip
    env = dict(os.environ, OMP_NUM_THREADS="1", SNRUN_JOB_DIR=str(tmp_path), SNRUN_NODE="n3")
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env,
                          cwd="/")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "sibling found" in proc.stdout
