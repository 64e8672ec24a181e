"""Step records with no change to the script: torch's optimizer-step hook installed by the rank
entry (as in a forked worker, torch already loaded), the script's own progress.report, and a
script without an optimizer, which runs unchanged and records nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from slurm_supernode.observe.records import StepRecord, read, steps_path
from slurm_supernode.runtime.rank_entry import __file__ as RANK_ENTRY

ROOT = Path(__file__).resolve().parents[2]

TRAIN = """
import torch
from slurm_supernode import progress
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
other = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
for i in range(5):
    loss = model(torch.ones(4, 8)).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step(); other.step()
    progress.report(loss=float(loss), tokens=100 + i)
"""

NO_OPTIMIZER = """
import torch
print("sum", int(torch.arange(4).sum()))
"""


def _run_rank(tmp_path: Path, body: str, preload_torch: bool = True, **env: str):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(body))
    job = tmp_path / "job"
    environ = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        SNRUN_JOB_DIR=str(job),
        SNRUN_NODE="n1",
        SNRUN_ATTEMPT="1",
        RANK="3",
        LOCAL_RANK="1",
        SNRUN_PROFILE_STEPS="0",
        **env,
    )
    pre = "import torch; " if preload_torch else ""
    code = (
        f"{pre}import runpy, sys; sys.argv = [{RANK_ENTRY!r}, {str(script)!r}]; "
        f"runpy.run_path({RANK_ENTRY!r}, run_name='__main__')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr
    return proc, list(read(steps_path(job, 1, 3)))


def test_hook_records_every_step_of_the_first_optimizer(tmp_path):
    _, records = _run_rank(tmp_path, TRAIN, SNRUN_TOKENS_PER_STEP="4096")
    assert [r.step for r in records] == [1, 2, 3, 4, 5]  # the second optimizer is not a step
    assert all(isinstance(r, StepRecord) and r.rank == 3 and r.node == "n1" for r in records)
    assert all(r.seconds >= 0 for r in records)
    # report() after step k carries figures into step k+1; the option gives the default
    assert records[0].tokens == 4096 and records[1].tokens == 100 and records[4].tokens == 103
    assert records[0].loss is None and records[1].loss is not None


def test_without_a_hook_each_report_is_a_step(tmp_path):
    """No torch loaded when rank_entry installs the hook: no hook, so each progress.report is a
    step (spawned workers get the hook through runtime/spawn_entry.py: test_spawn_entry)."""
    _, records = _run_rank(tmp_path, TRAIN, preload_torch=False)
    assert [r.step for r in records] == [1, 2, 3, 4, 5]
    assert [r.tokens for r in records] == [100, 101, 102, 103, 104]


def test_no_optimizer_runs_unchanged_and_records_nothing(tmp_path):
    proc, records = _run_rank(tmp_path, NO_OPTIMIZER)
    assert "sum 6" in proc.stdout and records == []


def test_progress_outside_snrun_is_a_no_op(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SNRUN_", "RANK"))}
    code = (
        "import sys; from slurm_supernode import progress; progress.report(tokens=1, loss=0.5);"
        " progress.flush(); print(sorted(m for m in sys.modules if m.startswith('torch')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env | {"PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert out.stdout.strip() == "[]"  # nothing heavy imported, nothing written
    assert list(tmp_path.iterdir()) == []


UNINSTALL = """
import torch
from slurm_supernode.runtime import step_hook
p = torch.zeros(1, requires_grad=True); p.grad = torch.zeros(1)
opt = torch.optim.SGD([p], lr=0.0)
assert step_hook.install()
opt.step(); opt.step()
step_hook.uninstall()
opt.step()
assert step_hook.install()
opt.step()
step_hook.finish()
"""


def test_uninstall_stops_recording_and_install_resumes(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), SNRUN_JOB_DIR=str(tmp_path), SNRUN_NODE="n",
               RANK="0", SNRUN_ATTEMPT="0", SNRUN_PROFILE_STEPS="0")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", UNINSTALL], env=env, capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    lines = (tmp_path / "observe" / "0" / "rank-0.steps.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in lines] == [1, 2, 3]  # the step without it: none
