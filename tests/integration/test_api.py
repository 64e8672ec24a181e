"""The Python API on the real cluster: plan, submit, wait with progress, attempts, logs,
from_id, and cancel of a running chain; one query serves both jobs the process watches."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from slurm_supernode import api
from slurm_supernode.api.watcher import Backoff, Watcher
from tests.integration.helpers import pythonpath

pytestmark = pytest.mark.slurm


def spec_for(tmp_path: Path, name: str, body: str) -> api.JobSpec:
    script = tmp_path / f"{name}.py"
    script.write_text(body)
    return api.JobSpec(
        program=str(script),
        supernodes=1,
        nproc_per_node=1,
        site="local",
        time="5",
        workdir=str(tmp_path),
        jobs_dir=str(tmp_path / "jobs"),
    )


def until(condition, timeout: float, what: str):  # the system's own report, polled
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.5)
    raise AssertionError(f"no {what} within {timeout:g} s")


def test_api_drives_a_job_and_cancels_another(slurm_cluster, tmp_path: Path, monkeypatch) -> None:
    # the jobs run this checkout's snrun (and keep the session's pyslurm on 25.11)
    monkeypatch.setenv("PYTHONPATH", pythonpath())
    hello = spec_for(
        tmp_path,
        "hello",
        "import os\nprint(f\"hello from rank {os.environ['RANK']}\", flush=True)\n",
    )
    sleeper = spec_for(
        tmp_path, "sleeper", "import time\nprint('started', flush=True)\ntime.sleep(600)\n"
    )
    plan = api.plan(hello)
    assert plan.refusal is None and plan.facts is not None  # the running Slurm answered
    assert plan.rank_map().world_size == 4  # one super node of 4 nodes, one rank each
    assert not plan.job_dir.exists()  # a plan writes nothing
    assert plan.sbatch_argv()[0] == "sbatch" and "#!" in plan.script

    watcher = Watcher(Backoff(first=0.5, most=5.0))
    job = api.submit(plan, watcher=watcher)
    other = api.submit(api.plan(sleeper), watcher=watcher)
    assert job.job_dir == plan.job_dir and (job.job_dir / "job.sh").is_file()

    seen: list[api.ChainState] = []
    final = job.wait(timeout=180, progress=seen.append)
    assert final.state == "COMPLETED" and final.ended and final.source == "ledger", final
    assert seen[-1] == final and all(not s.ended for s in seen[:-1])
    (attempt,) = job.attempts()
    assert attempt.exit_code == 0 and attempt.job_id == job.job_id
    assert "[rank 0] hello from rank 0" in list(job.logs(rank=0))
    ranks = {line.split("]")[0] for line in job.logs(streams=("stdout",))}
    assert ranks == {f"[rank {r}" for r in range(4)}

    again = api.Job.from_id(job.job_id, jobs_dir=tmp_path / "jobs")
    assert again.job_dir == job.job_dir and again.state().state == "COMPLETED"
    ledger_before = (job.job_dir / "ledger.jsonl").read_bytes()
    late = again.cancel()  # ended is ended: a cancel after the end changes nothing (#38)
    assert (late.ended, late.job_ids) == ("COMPLETED", ())
    assert (job.job_dir / "ledger.jsonl").read_bytes() == ledger_before
    assert again.state().state == "COMPLETED"
    assert again.job_ids() == [job.job_id]

    # the other job: running (its rank says so in its log), then cancelled as a chain
    until(lambda: other.state().state == "RUNNING", 120, "RUNNING state")
    until(lambda: "[rank 0] started" in list(other.logs(rank=0)), 60, "log line of rank 0")
    assert other.cancel().job_ids == (other.job_id,)
    ended = other.wait(timeout=60)
    assert (ended.state, ended.source) == ("CANCELLED", "ledger")
    until(lambda: watcher.record(other.job_id).ended, 60, "Slurm's end of the job")
