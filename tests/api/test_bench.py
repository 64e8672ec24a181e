"""Bench jobs from Python: the dry run plans without submitting, a submitted job is waited
for and its end told (ok or not), and the in-job measurement stores its run. Slurm and torch
are fakes here; tests/integration/test_ops_slurm.py runs a real bench job."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from slurm_supernode.api import bench
from slurm_supernode.bench.submit import BenchJob
from slurm_supernode.cli.main import main
from slurm_supernode.errors import InputError
from slurm_supernode.slurm.state import JobState
from tests.api.helpers import FakeSlurm, site_file
from tests.bench.helpers import make_run


def test_dry_run_plans_and_submits_nothing(tmp_path, monkeypatch):
    slurm = FakeSlurm(monkeypatch)
    sub = bench.submit_bench(BenchJob(count=1, sizes="1M", site_arg=site_file(tmp_path)),
                             dry_run=True)  # fmt: skip
    assert sub.job_id is None and not slurm.plans
    assert "bench run" in sub.plan.script and str(sub.plan.job_dir).startswith(str(tmp_path))
    with pytest.raises(InputError, match="dry run submitted no job"):
        bench.wait_bench(sub)


@pytest.mark.parametrize(("state", "code", "ok"), [("COMPLETED", 0, True), ("FAILED", 1, False),
                                                    ("COMPLETED", 3, False)])  # fmt: skip
def test_wait_tells_how_the_job_ended(tmp_path, monkeypatch, capsys, state, code, ok):
    from slurm_supernode.slurm import jobs

    FakeSlurm(monkeypatch)
    ended = SimpleNamespace(state=JobState.from_text(state), exit_code=code)
    monkeypatch.setattr(jobs, "wait_for", lambda job_id, states, timeout, poll: ended)
    site = site_file(tmp_path)
    sub = bench.submit_bench(BenchJob(count=1, jobs_dir=str(tmp_path / "j"), site_arg=site))
    assert sub.job_id == 101 and str(sub.plan.job_dir).startswith(str(tmp_path / "j"))
    end = bench.wait_bench(sub, timeout=10)
    assert (end.job_id, end.state, end.exit_code, end.ok) == (101, state, code, ok)
    assert end.log == sub.plan.job_dir / "logs" / "slurm-101.out"
    # the CLI prints the same, and exits 1 when the bench failed
    rc = main(["bench", "submit", "-S", "1", "--site", site, "--jobs-dir", str(tmp_path), "-W"])
    captured = capsys.readouterr()
    assert captured.out == "Submitted batch job 102\n"
    assert rc == (0 if ok else 1)
    assert (": error: " in captured.err) is not ok and f"bench job 102 {state}" in captured.err


def test_measure_writes_the_json_and_stores_the_run(tmp_path, monkeypatch):
    from slurm_supernode.bench import collectives
    from slurm_supernode.bench.store import open_store

    run = make_run(5.0, wrong=2)
    monkeypatch.setattr(collectives, "run_benchmark", lambda config: run)
    out, db = tmp_path / "run.json", str(tmp_path / "r.sqlite")
    got = bench.measure(None, json_out=str(out), db=db)  # type: ignore[arg-type]
    assert got is run and bench.wrong_elements(run) == 2
    assert json.loads(out.read_text())["run_id"] == run.run_id
    with open_store(db) as store:
        assert [r.run_id for r in store.runs()] == [run.run_id]
    monkeypatch.setattr(collectives, "run_benchmark", lambda config: None)  # not rank 0
    assert bench.measure(None, json_out=str(tmp_path / "x.json"), db=db) is None  # type: ignore[arg-type]
    assert not (tmp_path / "x.json").exists()
