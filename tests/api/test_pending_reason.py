"""A pending chain shows Slurm's reason in words; one that can never start says so in the API
(``never_starts``; ``wait`` raises ``NeverStarts``), `snrun status` and its `--json`, from a
recorded `scontrol show job --json` answer with the reason changed (a fake scontrol)."""

from __future__ import annotations

import copy
import json
import stat

import pytest

from slurm_supernode.api.job import Job, NeverStarts
from slurm_supernode.api.watcher import Backoff, Watcher
from slurm_supernode.cli.main import main
from slurm_supernode.errors import JobError
from tests.api.test_job import DATA, chain_dir


@pytest.fixture
def pending(tmp_path, monkeypatch):
    """A fake scontrol answering that job 70 is PENDING with the reason ``set`` gives."""
    answer = tmp_path / "answer.json"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "scontrol"
    fake.write_text(f"#!/bin/sh\ncat {answer}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    monkeypatch.setenv("SNRUN_SLURM_BACKEND", "cli")
    doc = json.loads((DATA / "json_job_pending_24.11.json").read_text())

    def set_reason(reason: str) -> None:
        job = copy.deepcopy(doc["jobs"][0]) | {"job_id": 70, "state_reason": reason}
        job["job_state"] = ["PENDING"]
        answer.write_text(json.dumps(doc | {"jobs": [job]}))

    return set_reason


def test_waiting_reasons_in_words(tmp_path, pending):
    d = chain_dir(tmp_path, 70)
    pending("Resources")
    job = Job(d, 70, watcher=Watcher(Backoff(first=0.01, most=0.02)))
    now = job.state()
    assert (now.state, now.never_starts) == ("PENDING", False)
    assert now.reason == "Resources: waiting for nodes to become free"


@pytest.mark.parametrize("reason", ["DependencyNeverSatisfied", "PartitionNodeLimit"])
def test_a_chain_that_can_never_start_says_so(tmp_path, pending, capsys, reason):
    d = chain_dir(tmp_path, 70)
    pending(reason)
    job = Job(d, 70, watcher=Watcher(Backoff(first=0.01, most=0.02)))
    now = job.state()
    assert (now.state, now.ended, now.never_starts) == ("PENDING", False, True)
    assert now.reason.startswith(f"{reason}: ")
    with pytest.raises(NeverStarts, match=f"job 70 can never start: {reason}") as info:
        job.wait(timeout=30)
    assert info.value.state.never_starts and "snrun cancel 70" in str(info.value)
    assert main(["status", "70", "--jobs-dir", str(tmp_path), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["state"] == "PENDING" and status["never_starts"] is True
    assert status["reason"] == now.reason
    assert main(["status", "70", "--jobs-dir", str(tmp_path)]) == 0
    assert f"state   : PENDING ({reason}: " in capsys.readouterr().out
    assert main(["status", "--jobs-dir", str(tmp_path), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["never_starts"] is True and row["reason"] == now.reason


def never_starting_sweep(tmp_path, array_id: int = 70):
    """A sweep of three tasks none of which has started: Slurm holds them in the array's own
    pending record (job ``array_id``), as it does until each task starts."""
    sweep = tmp_path / "sw"
    tasks = []
    for i in range(3):
        d = sweep / "tasks" / str(i)
        d.mkdir(parents=True)
        (d / "job.json").write_text(json.dumps({"job_ids": [], "array": f"{array_id}_{i}"}))
        tasks.append({"task": i, "params": {"seed": str(i)}, "job_dir": str(d)})
    doc = {"array_job_id": array_id, "array": "0-2", "tasks": tasks}
    (sweep / "sweep.json").write_text(json.dumps(doc))
    return sweep


@pytest.mark.parametrize("reason", ["DependencyNeverSatisfied", "PartitionNodeLimit"])
def test_a_sweep_that_can_never_start_says_so(tmp_path, pending, capsys, monkeypatch, reason):
    from slurm_supernode.api import watcher
    from slurm_supernode.api.sweep import Sweep
    from slurm_supernode.chain import ledger

    monkeypatch.setattr(watcher, "_shared", [])  # `snrun status` is a fresh process

    sweep_dir = never_starting_sweep(tmp_path)
    (tmp_path / "by-id").mkdir()
    (tmp_path / "by-id" / "70").symlink_to(sweep_dir)
    pending(reason)
    sweep = Sweep(sweep_dir, 70, watcher=Watcher(Backoff(first=0.01, most=0.02)))
    status = sweep.status()
    assert status["state"] == "PENDING" and status["never_starts"] is True
    assert status["never_start_tasks"] == [0, 1, 2] and status["reason"].startswith(reason)
    assert all(t["never_starts"] and t["reason"] == status["reason"] for t in status["tasks"])
    with pytest.raises(NeverStarts, match=f"sweep 70: task 0-2 can never start: {reason}") as e:
        sweep.wait(timeout=30)
    assert e.value.summary["never_starts"] and "snrun cancel 70" in str(e.value)
    assert e.value.state.never_starts and e.value.state.job_id == 70
    assert f"never     : task 0-2 can never start: {reason}: " in sweep.table()
    assert main(["status", "70", "--jobs-dir", str(tmp_path), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["never_starts"] is True and shown["reason"] == status["reason"]
    assert main(["status", "70", "--jobs-dir", str(tmp_path)]) == 0
    assert "task 0-2 can never start" in capsys.readouterr().out
    # one task started and ended: the others still can never start, so the sweep never ends
    ledger.append_final(sweep_dir / "tasks" / "1", job_id=71, state="COMPLETED", reason="ok")
    answer = json.loads((tmp_path / "answer.json").read_text())
    done = copy.deepcopy(answer["jobs"][0]) | {"job_id": 71, "job_state": ["COMPLETED"]}
    (tmp_path / "answer.json").write_text(json.dumps(answer | {"jobs": [*answer["jobs"], done]}))
    status = sweep.status()
    assert status["never_start_tasks"] == [0, 2] and status["tasks"][1]["never_starts"] is False
    with pytest.raises(NeverStarts, match="task 0,2 can never start"):
        sweep.wait(timeout=30)


def test_a_sweep_waiting_for_resources_is_only_pending(tmp_path, pending):
    from slurm_supernode.api.sweep import Sweep

    pending("Resources")
    sweep = Sweep(never_starting_sweep(tmp_path), 70, watcher=Watcher(Backoff(first=0.01)))
    status = sweep.status()
    assert status["never_starts"] is False and status["never_start_tasks"] == []
    assert status["tasks"][0]["reason"] == "Resources: waiting for nodes to become free"
    assert "never     :" not in sweep.table()
    with pytest.raises(JobError, match="did not end within"):
        sweep.wait(timeout=0.05)
