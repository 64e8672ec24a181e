"""A pending job shows Slurm's reason in words, and one that can never start says so in
`snrun status`, its `--json` and the API (``ChainState.never_starts``; ``Job.wait`` raises
``NeverStarts`` instead of waiting forever): a job that depends (``-d afterok``) on a chain
that was cancelled before it ran waits with DependencyNeverSatisfied. Nothing runs: the
predecessor is submitted held and cancelled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm_supernode import api
from slurm_supernode.api.job import NeverStarts
from slurm_supernode.api.watcher import Backoff, Watcher
from tests.integration.helpers import EXAMPLES, pythonpath, snrun, wait_for

pytestmark = pytest.mark.slurm


def test_a_job_that_can_never_start_says_so(slurm_cluster, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", pythonpath())
    monkeypatch.setenv("SNRUN_SITE", "local")
    monkeypatch.chdir(tmp_path)
    jobs = tmp_path / "jobs"
    script = str(EXAMPLES / "check_ranks.py")
    base = {"program": script, "supernodes": 1, "nproc_per_node": 1, "jobs_dir": str(jobs)}
    watcher = Watcher(Backoff(first=0.5, most=1.0))
    first = api.submit(api.plan(api.JobSpec(**base, sbatch_args=("--hold",))), watcher=watcher)
    spec = api.JobSpec(**base, dependency=f"afterok:{first.job_id}")
    second = api.submit(api.plan(spec), watcher=watcher)
    try:
        waiting = wait_for(lambda: second.state().reason, 60, "a reason for the dependent")
        assert waiting.startswith(("Dependency: ", "JobHeld")), waiting
        assert not second.state().never_starts
        assert first.cancel().job_ids == (first.job_id,)  # afterok can never be satisfied now
        never = wait_for(
            lambda: (s := second.state()).never_starts and s, 120, "DependencyNeverSatisfied"
        )
        assert never.state == "PENDING" and not never.ended
        assert (
            never.reason.startswith("DependencyNeverSatisfied: ") and "never start" in never.reason
        )
        with pytest.raises(NeverStarts, match="can never start: DependencyNeverSatisfied"):
            second.wait(timeout=60)
        out = snrun("status", str(second.job_id), "--json", jobs=jobs).stdout
        status = json.loads(out)
        assert status["state"] == "PENDING" and status["never_starts"] is True
        assert status["reason"].startswith("DependencyNeverSatisfied")
        text = snrun("status", str(second.job_id), jobs=jobs).stdout
        assert "state   : PENDING (DependencyNeverSatisfied: " in text
        rows = json.loads(snrun("status", "-n", "2", "--json", jobs=jobs).stdout)
        assert {r["job_ids"][0]: r["never_starts"] for r in rows}[second.job_id] is True
    finally:
        second.cancel()
        first.cancel()
