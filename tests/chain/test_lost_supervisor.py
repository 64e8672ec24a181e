"""A supervisor that dies (SIGKILL, OOM) leaves the chain cleanly FAILED, never waiting held
with nobody to release it; where nothing could record the end, Slurm's record says it."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_supernode.chain import ledger
from slurm_supernode.chain.lost import (
    describe_exit,
    record_lost_supervisor,
    verdict_without_supervisor,
)
from slurm_supernode.slurm import jobinfo, jobs
from slurm_supernode.slurm.state import JobState


@pytest.fixture
def updates(monkeypatch) -> list[tuple[int, dict]]:
    calls: list[tuple[int, dict]] = []
    monkeypatch.setattr(jobs, "update_job", lambda job_id, **kw: calls.append((job_id, kw)))
    return calls


def started(job_dir: Path, attempt: int = 0) -> None:
    ledger.append(job_dir, "attempt_start", attempt=attempt, job_id=7, nodes="n[0-1]")


def test_killed_supervisor_closes_the_attempt_and_fails_the_chain(tmp_path, updates):
    started(tmp_path)
    reason = record_lost_supervisor(tmp_path, 137, 7, expedite=False)
    chain = ledger.fold(ledger.read(tmp_path))
    assert chain.final["state"] == "FAILED" and chain.final["reason"] == reason
    assert "supervisor died (exit 137 (SIGKILL)) while attempt 0 ran" in reason
    (attempt,) = chain.attempts
    assert (attempt.cause, attempt.action, attempt.exit_code) == ("supervisor", "stop", None)
    assert updates == []  # a plain job is not requeued by Slurm for a non-zero exit


def test_expedited_job_has_its_requeue_turned_off(tmp_path, updates):
    """Slurm would requeue an expedited job that exits non-zero held (REQUEUE_HOLD)."""
    started(tmp_path)
    record_lost_supervisor(tmp_path, 137, 7, expedite=True)
    assert updates == [(7, {"Requeue": 0})]


def test_a_chain_that_already_ended_is_left_alone(tmp_path, updates):
    started(tmp_path)
    ledger.append(tmp_path, "final", job_id=7, state="COMPLETED", reason="all nodes exited 0")
    assert record_lost_supervisor(tmp_path, 137, 7, expedite=True) is None
    assert [r["event"] for r in ledger.read(tmp_path)] == ["attempt_start", "final"]
    assert updates == [(7, {"Requeue": 0})]  # harmless, and done before anything can fail


def test_exit_codes_in_words():
    assert describe_exit(137) == "exit 137 (SIGKILL)" and describe_exit(2) == "exit 2"
    assert describe_exit(255) == "exit 255"


def info(state: JobState) -> jobinfo.JobInfo:
    return jobinfo.job_from_json({"job_id": 7, "job_state": [state.base, *state.flags]})


def test_whole_batch_step_died_slurm_says_it_ended(tmp_path):
    started(tmp_path)
    chain = ledger.fold(ledger.read(tmp_path))
    verdict = verdict_without_supervisor(chain, info(JobState("FAILED")))
    assert verdict["state"] == "FAILED" and "without a final ledger record" in verdict["reason"]
    completing = JobState("FAILED", frozenset({"COMPLETING"}))
    assert verdict_without_supervisor(chain, info(completing)) is None  # not yet ended


def test_held_job_whose_attempt_never_ended_is_stranded(tmp_path):
    started(tmp_path)
    chain = ledger.fold(ledger.read(tmp_path))
    held = JobState("PENDING", frozenset({"REQUEUE_HOLD"}))
    verdict = verdict_without_supervisor(chain, info(held))
    assert verdict["state"] == "HELD" and "scontrol release 7" in verdict["reason"]
    assert verdict_without_supervisor(chain, info(JobState("RUNNING"))) is None


def test_held_by_the_supervisors_own_requeue_is_not_stranded(tmp_path):
    """An expedite-held requeue: the attempt ended, the releaser lifts the hold."""
    started(tmp_path)
    ledger.append(tmp_path, "attempt_end", attempt=0, job_id=7, cause="health", action="requeue")
    chain = ledger.fold(ledger.read(tmp_path))
    held = JobState("PENDING", frozenset({"REQUEUE_HOLD"}))
    assert verdict_without_supervisor(chain, info(held)) is None
