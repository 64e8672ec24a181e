"""Sweeps and chains on the real cluster, driven through the Python API and the CLI: a sweep
of 4 tasks as one job array in which one task's first attempt fails and is restarted while the
others complete; and a job that waits for another's whole chain, across a requeue (same job
id) and across a resubmission (new job id: the dependency is moved by the supervisor)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from slurm_supernode.api.job import Job
from slurm_supernode.api.sweep import grid, submit_sweep
from slurm_supernode.launch.jobspec import JobSpec
from tests.integration.helpers import (
    EXAMPLES,
    attempts,
    ledger,
    pythonpath,
    snrun,
    submit,
    wait_final,
    wait_for,
)

pytestmark = pytest.mark.slurm
TRAIN = str(EXAMPLES / "train_resumable.py")
SUPERNODES = {"n[0-3]", "n[4-7]"}

TASK = """\
import os, sys
seed, attempt = os.environ["SNRUN_PARAM_SEED"], int(os.environ["SNRUN_ATTEMPT"])
print(f"task {os.environ['SNRUN_SWEEP_TASK']} seed {seed} argv {' '.join(sys.argv[1:])} "
      f"attempt {attempt}", flush=True)
sys.exit(3 if seed == "1" and attempt == 0 else 0)
"""

NOTE_START = """\
import os, time
print(f"dependent started at {time.time():.3f} attempt {os.environ['SNRUN_ATTEMPT']}", flush=True)
"""


@pytest.fixture
def api_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The API in this process submits what the job runs: this checkout's code (and the
    session's pyslurm on 25.11: snrun subprocesses fail without it under
    SNRUN_SLURM_BACKEND=pyslurm)."""
    monkeypatch.setenv("PYTHONPATH", pythonpath())
    monkeypatch.setenv("SNRUN_SITE", "local")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "jobs"


def scontrol_show(job: str) -> str:
    out = subprocess.run(["scontrol", "show", "job", "-o", job], capture_output=True, text=True)
    return out.stdout


def test_sweep_of_four_tasks_one_restarted_others_complete(slurm_cluster, tmp_path, api_env):
    (tmp_path / "task.py").write_text(TASK)
    spec = JobSpec(
        program="task.py",
        program_args=("--seed", "{seed}"),
        supernodes=1,
        nproc_per_node=1,
        workdir=str(tmp_path),
        site="local",
        jobs_dir=str(api_env),
    )
    sweep = submit_sweep(spec, grid(seed=range(4)), throttle=2)
    assert "ArrayTaskThrottle=2" in scontrol_show(str(sweep.array_job_id))
    summary = sweep.wait(timeout=420)
    assert summary["state"] == "COMPLETED", sweep.table()
    rows = {r["task"]: r for r in summary["tasks"]}
    assert [rows[i]["params"] for i in range(4)] == [{"seed": str(i)} for i in range(4)]
    for i in range(4):
        task_dir = sweep.task_dir(i)
        ends = [(a["cause"], a["action"]) for a in attempts(task_dir)]
        expect = [("app_error", "restart")] if i == 1 else []
        assert ends == [*expect, ("success", "complete")], (i, ends)
        starts = [r for r in ledger(task_dir) if r["event"] == "attempt_start"]
        assert {s["nodes"] for s in starts} <= SUPERNODES  # one whole super node each
        log = "".join(p.read_text() for p in (task_dir / "logs").glob("slurm-*.out"))
        assert f"task {i} seed {i} argv --seed {i} attempt {len(ends) - 1}" in log, log[-2000:]
    assert rows[1]["attempts"] == 2 and rows[1]["causes"] == ["app_error"]
    # the table a user sees, by the array's id; a task by ARRAY_TASK
    table = snrun("status", str(sweep.array_job_id), jobs=api_env).stdout
    lines = {ln.split()[0]: ln.split() for ln in table.splitlines()[4:] if ln.strip()}
    assert lines["task"][:5] == ["task", "parameters", "state", "tries", "cause"]
    assert lines["1"][:5] == ["1", "seed=1", "COMPLETED", "2", "app_error"]
    assert lines["2"][:5] == ["2", "seed=2", "COMPLETED", "1", "-"]
    one = snrun("status", f"{sweep.array_job_id}_1", jobs=api_env).stdout
    assert f"{sweep.sweep_dir}/tasks/1" in one and "app_error" in one
    recent = snrun("status", jobs=api_env).stdout  # the user's recent chains and sweeps
    assert f"{sweep.array_job_id}_[0-3%2]" in recent and str(sweep.sweep_dir) in recent


def started_at(job_dir: Path) -> float:
    return min(r["time"] for r in ledger(job_dir) if r["event"] == "attempt_start")


def progress(job_dir: Path) -> int:
    try:
        return int((job_dir / "heartbeat").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


@pytest.mark.parametrize("requeue", ["--requeue", "--no-requeue"])
def test_dependent_starts_only_after_the_whole_chain_ended_ok(
    slurm_cluster, tmp_path, api_env, requeue
):
    """--requeue: the time-limit requeue keeps the job id. --no-requeue: Slurm refuses the
    requeue, the supervisor resubmits under a new id and moves the dependent to it (a Slurm
    afterok on the first id alone would have started it then)."""
    jobs = api_env
    first, pred = submit(
        "-S", "1", "--nproc-per-node", "1", "-t", "10", f"--sbatch={requeue}",
        TRAIN, "--steps", "40", "--step-time", "0.25", jobs=jobs,
    )  # fmt: skip
    (tmp_path / "note.py").write_text(NOTE_START)
    spec = JobSpec(program="note.py", supernodes=1, nproc_per_node=1, site="local",
                   workdir=str(tmp_path), jobs_dir=str(jobs))  # fmt: skip
    if requeue == "--requeue":  # the command line
        out = snrun("--parsable", "--after", f"{first}:ok", "-S", "1", "--nproc-per-node", "1",
                    "note.py", jobs=jobs)  # fmt: skip
        dep_id = int(out.stdout.split()[-1])
        dep = (jobs / "by-id" / str(dep_id)).resolve()
    else:  # the API: the method on a handle found by job id
        submitted = Job.from_id(first, jobs_dir=jobs).then(spec, "ok")
        dep_id, dep = submitted.job_id, submitted.job_dir
    assert f"Dependency=afterok:{first}" in scontrol_show(str(dep_id))
    wait_for(lambda: progress(pred) >= 3, 180, "progress of the first job")
    # what Slurm does at --signal=B:USR2@90 before the time limit, sent now
    subprocess.run(["scancel", "--batch", "--signal=USR2", str(first)], check=True)
    moved = wait_for(
        lambda: [r for r in ledger(pred) if r["event"] in ("requeued", "resubmitted")], 120,
        "the requeue or resubmission",
    )  # fmt: skip
    if requeue == "--no-requeue":
        new_id = moved[0]["new_job_id"]
        assert moved[0]["event"] == "resubmitted" and new_id != first
        # the old job ended 0 by now or soon: the dependent waits on the new id instead
        wait_for(lambda: "COMPLETED" in scontrol_show(str(first)), 60, "the old job's end")
        show = scontrol_show(str(dep_id))
        assert f"Dependency=afterok:{new_id}" in show and "JobState=PENDING" in show, show
    else:
        assert moved[0]["event"] == "requeued"
        assert "JobState=PENDING" in scontrol_show(str(dep_id))
    final = wait_final(pred, 300)
    assert final["state"] == "COMPLETED", final
    assert [a["cause"] for a in attempts(pred)] == ["time_limit", "success"]
    dep_final = wait_final(dep, 300)
    assert dep_final["state"] == "COMPLETED", dep_final
    assert started_at(dep) >= final["time"], (started_at(dep), final["time"])
    assert os.path.exists(dep / "after.json")
