"""A sweep's status and wait ask Slurm once per poll for all its tasks (issue #26, item 2):
never one query per task. Slurm is the fake controller of conftest.py."""

from __future__ import annotations

import json
from pathlib import Path

from slurm_supernode.api.sweep import Sweep
from slurm_supernode.api.watcher import Watcher
from slurm_supernode.chain import ledger
from slurm_supernode.chain.array_status import sweep_summary
from tests.api.test_watcher import Clock

TASKS = 50


def running_sweep(tmp_path: Path) -> tuple[Path, list[Path]]:
    """A sweep whose every task's chain has started (job 6000 + task) and not ended."""
    sweep = tmp_path / "sw"
    tasks = []
    for i in range(TASKS):
        d = sweep / "tasks" / str(i)
        ledger.append(d, "attempt_start", attempt=0, job_id=6000 + i, nodes="n[0-3]")
        tasks.append({"task": i, "params": {"seed": str(i)}, "job_dir": str(d)})
    (sweep / "sweep.json").write_text(json.dumps({"array_job_id": 5999, "tasks": tasks}))
    return sweep, [Path(t["job_dir"]) for t in tasks]


def test_status_of_fifty_running_tasks_is_one_query(tmp_path, slurm):
    sweep_dir, _ = running_sweep(tmp_path)
    slurm.set_jobs({6000 + i: "RUNNING" for i in range(TASKS)})
    summary = Sweep(sweep_dir, 5999, watcher=Watcher(clock=Clock())).status()
    assert summary["counts"] == {"RUNNING": TASKS}
    assert slurm.calls() == ["show job --json"]
    # the command line's `snrun status <sweep>` (no watcher): one query too
    assert sweep_summary(sweep_dir)["counts"] == {"RUNNING": TASKS}
    assert slurm.calls() == ["show job --json"] * 2


def test_wait_reads_ledgers_every_pause_and_slurm_on_the_watchers_schedule(tmp_path, slurm):
    sweep_dir, task_dirs = running_sweep(tmp_path)
    slurm.set_jobs({6000 + i: "RUNNING" for i in range(TASKS)})
    clock = Clock()
    naps: list[float] = []

    def sleep(seconds: float) -> None:
        naps.append(seconds)
        clock.now += seconds
        if len(naps) == 3:  # the supervisors record their chains' ends
            for i, d in enumerate(task_dirs):
                ledger.append(d, "final", job_id=6000 + i, state="COMPLETED", reason="ok")

    seen: list[dict[str, int]] = []
    sweep = Sweep(sweep_dir, 5999, watcher=Watcher(clock=clock))
    summary = sweep.wait(timeout=600, progress=lambda s: seen.append(s["counts"]), sleep=sleep)
    assert summary["state"] == "COMPLETED" and len(naps) == 3
    assert seen == [{"RUNNING": TASKS}, {"COMPLETED": TASKS}]
    # 3 s passed: the watcher's first interval is 2 s, so Slurm was asked twice, not 150 times
    assert slurm.calls() == ["show job --json"] * 2
