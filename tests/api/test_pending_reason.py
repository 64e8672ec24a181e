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
