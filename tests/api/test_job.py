"""The Job handle on a chain: state from the ledger and Slurm's record, wait with progress,
attempts, logs, cancel and from_id, on job directories written here and a fake scontrol and
scancel on PATH (the real cluster: tests/integration/test_api.py)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from slurm_supernode.api import job as job_module
from slurm_supernode.api.job import Job, WaitTimeout
from slurm_supernode.api.watcher import Backoff, Watcher
from slurm_supernode.chain import ledger
from slurm_supernode.errors import InputError

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    """Fake scontrol (``show job --json`` of the jobs ``set_state`` named) and scancel; every
    call logged."""
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
        def set_state(self, states: dict[int, str]) -> None:
            doc = dict(template)
            entry = template["jobs"][0]
            doc["jobs"] = [entry | {"job_id": i, "job_state": [s]} for i, s in states.items()]
            answer.write_text(json.dumps(doc))

        def calls(self) -> list[str]:
            return log.read_text().splitlines()

    return Slurm()


def chain_dir(root: Path, job_id: int) -> Path:
    """A submitted chain's directory as snrun leaves it (job.json, by-id link)."""
    d = root / f"train-{job_id}"
    (d / "logs").mkdir(parents=True)
    (d / "plan.json").write_text("{}")
    (d / "job.json").write_text(json.dumps({"job_ids": [job_id], "submitted": 0}))
    (root / "by-id").mkdir(exist_ok=True)
    (root / "by-id" / str(job_id)).symlink_to(d)
    return d


def fresh_watcher() -> Watcher:
    return Watcher(Backoff(first=0.01, most=0.05))


def test_state_follows_slurm_until_the_ledger_ends_the_chain(tmp_path, slurm):
    d = chain_dir(tmp_path, 41)
    slurm.set_state({41: "PENDING"})
    job = Job.from_id(41, jobs_dir=tmp_path, watcher=fresh_watcher())
    assert job.job_dir == d.resolve() and job.job_id == 41
    now = job.state()
    assert (now.state, now.ended, now.source) == ("PENDING", False, "queue")
    ledger.append(d, "attempt_start", attempt=0, job_id=41, nodes="n[0-3]")
    # the watcher's last answer (PENDING) is older than the ledger's started attempt
    assert job.state().state == "RUNNING" and job.state().slurm_state == "PENDING"
    slurm.set_state({41: "RUNNING"})
    job.watcher.poll()
    assert job.state().state == "RUNNING" and job.state().attempts == 1
    ledger.append(d, "attempt_end", attempt=0, job_id=41, exit_code=0, cause="success")
    ledger.append(d, "final", job_id=41, state="COMPLETED", reason="done")
    calls = len(slurm.calls())
    final = job.state()
    assert (final.state, final.ended, final.reason, final.source) == (
        "COMPLETED", True, "done", "ledger",
    )  # fmt: skip
    assert len(slurm.calls()) == calls  # a final record needs no Slurm query
    (attempt,) = job.attempts()
    assert (attempt.attempt, attempt.exit_code, attempt.cause) == (0, 0, "success")


def test_wait_reports_each_new_state_and_returns_the_final_one(tmp_path, slurm):
    d = chain_dir(tmp_path, 42)
    slurm.set_state({42: "RUNNING"})
    ledger.append(d, "attempt_start", attempt=0, job_id=42, nodes="n0")
    job = Job(d, 42, watcher=fresh_watcher())
    seen = []
    naps = []

    def sleep(seconds: float) -> None:  # the supervisor ends the chain during the third nap
        naps.append(seconds)
        if len(naps) == 3:
            ledger.append(d, "final", job_id=42, state="FAILED", reason="rank 3 exit 1")

    final = job.wait(timeout=60, progress=seen.append, sleep=sleep)
    assert [s.state for s in seen] == ["RUNNING", "FAILED"]
    assert final.state == "FAILED" and final.reason == "rank 3 exit 1"
    assert all(0 < n <= job_module.LEDGER_POLL for n in naps)


def test_wait_believes_slurm_alone_after_a_grace(tmp_path, slurm, monkeypatch):
    """The batch step died: Slurm says FAILED and no final record will come."""
    monkeypatch.setattr(job_module, "FINAL_RECORD_GRACE", 0.2)
    d = chain_dir(tmp_path, 43)
    ledger.append(d, "attempt_start", attempt=0, job_id=43, nodes="n0")
    slurm.set_state({43: "FAILED"})
    final = Job(d, 43, watcher=fresh_watcher()).wait(timeout=30)
    assert final.state == "FAILED" and final.ended and final.source == "slurm"
    assert "without a final ledger record" in final.reason


def test_wait_reports_an_ended_state_once_the_final_one(tmp_path, slurm):
    """Slurm's record says COMPLETED a moment before the ledger's final record is read (the
    watcher's answer is newer): progress never sees an ended state that is not the last."""
    d = chain_dir(tmp_path, 46)
    ledger.append(d, "attempt_start", attempt=0, job_id=46, nodes="n0")
    slurm.set_state({46: "COMPLETED"})
    job = Job(d, 46, watcher=fresh_watcher())
    naps = []

    def sleep(seconds: float) -> None:  # the final record lands during the second nap
        naps.append(seconds)
        if len(naps) == 2:
            ledger.append(d, "final", job_id=46, state="COMPLETED", reason="done")

    seen = []
    final = job.wait(timeout=60, progress=seen.append, sleep=sleep)
    assert final.source == "ledger" and final.ended
    assert seen[-1] == final and not any(s.ended for s in seen[:-1]), seen


def test_wait_gives_up_at_the_timeout(tmp_path, slurm):
    d = chain_dir(tmp_path, 44)
    slurm.set_state({44: "PENDING"})
    with pytest.raises(WaitTimeout, match="did not end within"):
        Job(d, 44, watcher=fresh_watcher()).wait(timeout=0.3)


def test_cancel_marks_the_chain_and_cancels_every_job_id(tmp_path, slurm):
    d = chain_dir(tmp_path, 45)
    ledger.append(d, "attempt_start", attempt=0, job_id=45)
    ledger.append(d, "attempt_end", attempt=0, job_id=45, cause="node_lost", action="resubmit")
    ledger.append(d, "resubmitted", attempt=0, job_id=45, new_job_id=46)  # not started yet
    slurm.set_state({45: "COMPLETED", 46: "PENDING"})
    job = Job.from_id(45, jobs_dir=tmp_path, watcher=fresh_watcher())
    assert job.cancel().job_ids == (45, 46)
    assert [c for c in slurm.calls() if c.startswith("scancel")] == ["scancel 45", "scancel 46"]
    assert job.state().state == "CANCELLED" and job.state().ended


def test_logs_of_a_rank_and_followed_across_attempts(tmp_path, slurm):
    d = chain_dir(tmp_path, 47)
    for attempt, text in ((0, "loss 3.0\n"), (1, "loss 2.0\nloss 1.0\n")):
        folder = d / "logs" / f"attempt{attempt}" / "n0" / "run_0" / "attempt_0" / "0"
        folder.mkdir(parents=True)
        (folder / "stdout.log").write_text(text)
        (folder / "stderr.log").write_text("")
        (d / "env").mkdir(exist_ok=True)
        (d / "env" / f"n0.{attempt}.json").write_text(
            json.dumps({"node_rank": 0, "argv": ["--nproc-per-node=1"]})
        )
    job = Job(d, 47, watcher=fresh_watcher())
    assert list(job.logs(rank=0)) == ["[rank 0] loss 2.0", "[rank 0] loss 1.0"]
    assert list(job.logs(attempt=0)) == ["[rank 0] loss 3.0"]
    with pytest.raises(InputError, match="no such rank"):
        list(job.logs(rank=5))
    ledger.append(d, "final", job_id=47, state="COMPLETED")
    followed = list(job.logs(follow=True, streams=("stdout",)))
    assert followed == ["== attempt 1 ==", "[rank 0] loss 2.0", "[rank 0] loss 1.0"]


def test_from_id_of_an_unknown_job_says_where_it_looked(tmp_path):
    with pytest.raises(InputError, match="no snrun job '999'"):
        Job.from_id(999, jobs_dir=tmp_path)


def test_the_package_names_resolve_on_use():
    """``import slurm_supernode.api`` loads none of its modules; each name loads its own, and
    loading one module never hides another name (``JobPlan`` first, then ``plan``)."""
    import subprocess
    import sys

    code = (
        "import sys, slurm_supernode.api as api\n"
        "before = sorted(m for m in sys.modules if m.startswith('slurm_supernode.api.'))\n"
        "order = ['JobPlan', 'Job', *api.__all__]\n"
        "print(before, all(getattr(api, n).__name__ == n for n in order))\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={"PYTHONPATH": str(root)},
    )  # fmt: skip
    assert out.stdout.split() == ["[]", "True"]
