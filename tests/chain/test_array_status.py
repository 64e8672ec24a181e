"""`snrun status <sweep>`: one line per task folded from each task's own ledger."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from slurm_supernode.chain import ledger
from slurm_supernode.chain.array_status import (
    format_sweep,
    overall_state,
    recent_sweeps,
    sweep_summary,
)


def make_sweep(tmp_path: Path) -> Path:
    sweep = tmp_path / "sw"
    tasks = []
    for i in range(3):
        d = sweep / "tasks" / str(i)
        d.mkdir(parents=True)
        (d / "job.json").write_text(json.dumps({"job_ids": [], "array": f"900_{i}"}))
        tasks.append({"task": i, "params": {"lr": f"{i}e-4", "seed": "0"}, "job_dir": str(d)})
    data = {"array_job_id": 900, "array": "0-2%2", "submitted": 1.0, "tasks": tasks}
    (sweep / "sweep.json").write_text(json.dumps(data))

    def attempt(d: Path, n: int, job: int, cause: str, action: str) -> None:
        ledger.append(d, "attempt_start", attempt=n, job_id=job, nodes="n[0-3]")
        ledger.append(d, "attempt_end", attempt=n, job_id=job, exit_code=0, cause=cause,
                      action=action, detail="x")  # fmt: skip

    t0, t1 = Path(tasks[0]["job_dir"]), Path(tasks[1]["job_dir"])
    attempt(t0, 0, 901, "app_error", "restart")
    attempt(t0, 1, 901, "success", "complete")
    ledger.append(t0, "final", job_id=901, state="COMPLETED", reason="all nodes exited 0")
    attempt(t1, 0, 902, "app_error", "restart")
    attempt(t1, 1, 902, "app_error", "stop")
    ledger.append(t1, "final", job_id=902, state="FAILED", reason="same failure twice")
    return sweep  # task 2 has not started


def test_table_has_a_line_per_task_with_params_state_tries_cause(tmp_path):
    summary = sweep_summary(make_sweep(tmp_path))
    assert summary["state"] == "RUNNING" and summary["counts"] == {
        "COMPLETED": 1,
        "FAILED": 1,
        "PENDING": 1,
    }
    lines = format_sweep(summary).splitlines()
    assert lines[1].startswith("array job : 900 (--array=0-2%2)")
    rows = [ln.split() for ln in lines[4:]]
    assert rows[0] == ["task", "parameters", "state", "tries", "cause", "job", "ids", "reason"]
    assert rows[1] == ["0", "lr=0e-4", "seed=0", "COMPLETED", "2", "app_error", "901"]
    assert rows[2][:7] == ["1", "lr=1e-4", "seed=0", "FAILED", "2", "app_error", "902"]
    assert " ".join(rows[2][7:]) == "same failure twice"
    assert rows[3] == ["2", "lr=2e-4", "seed=0", "PENDING", "0", "-", "-"]


def test_overall_state_and_recent_rows(tmp_path):
    assert overall_state(Counter(COMPLETED=3), 3) == "COMPLETED"
    assert overall_state(Counter(COMPLETED=2, FAILED=1), 3) == "FAILED"
    assert overall_state(Counter(COMPLETED=2, CANCELLED=1), 3) == "CANCELLED"
    assert overall_state(Counter(PENDING=3), 3) == "PENDING"
    assert overall_state(Counter(COMPLETED=1, PENDING=2), 3) == "RUNNING"
    (row,) = recent_sweeps([make_sweep(tmp_path)])
    assert row["job_ids"] == ["900_[0-2%2]"] and row["attempts"] == 4
