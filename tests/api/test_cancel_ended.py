"""Ended is ended: `Job.cancel()` and `snrun cancel` on a chain that has ended (its final
record, or Slurm's record with nobody left to write one) change nothing and say so; a chain
that runs, waits, or waits held with no supervisor is cancelled."""

from __future__ import annotations

import json
import stat

import pytest

from slurm_supernode.api.cancel import CancelOutcome
from slurm_supernode.api.job import Job
from slurm_supernode.api.sweep import Sweep
from slurm_supernode.api.watcher import Backoff, Watcher
from slurm_supernode.chain import ledger
from slurm_supernode.chain.array_status import cancel_sweep
from slurm_supernode.cli.main import main
from tests.api.test_job import DATA, chain_dir


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    """A fake scontrol answering with the jobs ``set_state`` named; a fake scancel; calls."""
    template = json.loads((DATA / "json_job_pending_24.11.json").read_text())
    answer, log = tmp_path / "answer.json", tmp_path / "calls"
    log.write_text("")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, body in (("scontrol", f"cat {answer}"), ("scancel", "true")):
        fake = bindir / name
        fake.write_text(f'#!/bin/bash\necho "{name} $*" >>{log}\n{body}\n')
        fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    monkeypatch.setenv("SNRUN_SLURM_BACKEND", "cli")

    class Slurm:
        def set_state(self, states: dict[int, list[str]]) -> None:
            entry = template["jobs"][0]
            jobs = [entry | {"job_id": i, "job_state": s} for i, s in states.items()]
            answer.write_text(json.dumps(dict(template) | {"jobs": jobs}))

        def scancels(self) -> list[str]:
            return [c for c in log.read_text().splitlines() if c.startswith("scancel")]

    return Slurm()


def handle(d, job_id: int) -> Job:
    return Job(d, job_id, watcher=Watcher(Backoff(first=0.01, most=0.05)))


@pytest.mark.parametrize("state", ["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"])
def test_cancel_of_a_chain_with_a_final_record_changes_nothing(tmp_path, slurm, state):
    d = chain_dir(tmp_path, 50)
    ledger.append(d, "attempt_start", attempt=0, job_id=50, nodes="n0")
    ledger.append_final(d, job_id=50, state=state, reason="why it ended")
    slurm.set_state({50: [state]})
    before = (d / "ledger.jsonl").read_bytes()
    outcome = handle(d, 50).cancel()
    assert (outcome.job_ids, outcome.ended, outcome.reason) == ((), state, "why it ended")
    assert not outcome.cancelled and "nothing changed" in outcome.note("job chain x")
    assert (d / "ledger.jsonl").read_bytes() == before and slurm.scancels() == []
    assert handle(d, 50).state().state == state


def test_cancel_after_the_batch_step_died_changes_nothing(tmp_path, slurm):
    """No final record, Slurm says the job ended: the chain ended as Slurm says."""
    d = chain_dir(tmp_path, 51)
    ledger.append(d, "attempt_start", attempt=0, job_id=51, nodes="n0")
    slurm.set_state({51: ["FAILED"]})
    outcome = handle(d, 51).cancel()
    assert outcome.ended == "FAILED" and outcome.job_ids == ()
    assert ledger.fold(ledger.read(d)).final is None and slurm.scancels() == []


def test_a_chain_held_with_no_supervisor_is_cancelled(tmp_path, slurm):
    d = chain_dir(tmp_path, 52)
    ledger.append(d, "attempt_start", attempt=0, job_id=52, nodes="n0")
    slurm.set_state({52: ["PENDING", "REQUEUE_HOLD"]})
    outcome = handle(d, 52).cancel()
    assert outcome.cancelled and outcome.job_ids == (52,)
    assert slurm.scancels() == ["scancel 52"]
    assert ledger.fold(ledger.read(d)).final["state"] == "CANCELLED"


def test_a_running_chain_is_cancelled_once(tmp_path, slurm):
    d = chain_dir(tmp_path, 53)
    ledger.append(d, "attempt_start", attempt=0, job_id=53, nodes="n0")
    slurm.set_state({53: ["RUNNING"]})
    job = handle(d, 53)
    assert job.cancel().job_ids == (53,)
    again = job.cancel()  # the second cancel: the chain has ended CANCELLED
    assert again.ended == "CANCELLED" and again.job_ids == ()
    assert slurm.scancels() == ["scancel 53"]
    assert [r["state"] for r in ledger.read(d) if r["event"] == "final"] == ["CANCELLED"]


def test_snrun_cancel_of_an_ended_chain_is_a_note_and_exit_0(tmp_path, slurm, capsys):
    d = chain_dir(tmp_path, 54)
    ledger.append_final(d, job_id=54, state="COMPLETED", reason="all nodes exited 0")
    slurm.set_state({54: ["COMPLETED"]})
    assert main(["cancel", "54", "--jobs-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "had already ended COMPLETED (all nodes exited 0)" in out
    assert "nothing changed" in out and slurm.scancels() == []
    assert main(["status", "54", "--jobs-dir", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "COMPLETED"


def test_cancel_of_an_ended_sweep_changes_nothing(tmp_path, slurm, capsys):
    tasks = []
    for i in range(2):
        d = tmp_path / "sweep" / "tasks" / str(i)
        d.mkdir(parents=True)
        ledger.append_final(d, job_id=60 + i, state="COMPLETED", reason="ok")
        tasks.append({"task": i, "params": {}, "job_dir": str(d)})
    sweep = tmp_path / "sweep"
    (sweep / "sweep.json").write_text(json.dumps({"tasks": tasks, "array_job_id": 59}))
    assert cancel_sweep(sweep) == [] and slurm.scancels() == []
    # the API's Sweep.cancel: Job.cancel's outcome (ended is ended, and says so)
    outcome = Sweep(sweep, 59).cancel()
    assert isinstance(outcome, CancelOutcome) and not outcome.cancelled
    assert (outcome.job_ids, outcome.ended) == ((), "COMPLETED")
    assert outcome.reason == "every task had already ended: 2 COMPLETED"
    assert main(["cancel", str(sweep)]) == 0
    assert "sweep sweep had already ended COMPLETED" in capsys.readouterr().out
    assert slurm.scancels() == []
    # one task still runs: only it (and the array) is cancelled; the ended task stays
    ledger.append(tmp_path / "sweep" / "tasks" / "2", "attempt_start", attempt=0, job_id=62)
    tasks.append({"task": 2, "params": {}, "job_dir": str(tmp_path / "sweep/tasks/2")})
    (sweep / "sweep.json").write_text(json.dumps({"tasks": tasks, "array_job_id": 59}))
    slurm.set_state({62: ["RUNNING"]})
    outcome = Sweep(sweep, 59).cancel()
    assert (outcome.job_ids, outcome.ended, outcome.cancelled) == ((59, 62), None, True)
    assert outcome.note("sweep x") == "cancelled sweep x (59, 62)"
    states = [ledger.fold(ledger.read(sweep / "tasks" / str(i))).final["state"] for i in range(3)]
    assert states == ["COMPLETED", "COMPLETED", "CANCELLED"]
    again = Sweep(sweep, 59).cancel()  # every task has ended now
    assert (again.ended, again.job_ids) == ("CANCELLED", ())  # completed and cancelled only
    assert again.reason == "every task had already ended: 1 CANCELLED, 2 COMPLETED"
