"""Dependencies between chains (chain/dependents.py) against fake scontrol/sbatch: a dependent is
registered, moved to the chain's current id when the chain went on meanwhile, released; the
supervisor moves every dependent when it resubmits (before its own job ends 0); a sweep task's
resubmission is a one-task array; what held only for the first submission is not repeated."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from slurm_supernode.chain import ledger
from slurm_supernode.chain.dependents import (
    DEPENDENTS,
    Predecessor,
    attach,
    prepare,
    resolve,
    rewrite_dependents,
)
from slurm_supernode.errors import InputError
from slurm_supernode.launch.after import After
from slurm_supernode.runtime.array_task_env import sweep_env
from slurm_supernode.runtime.classify import ExitCode
from slurm_supernode.runtime.sbatch_argv import resubmission_args
from tests.runtime.test_supervisor_loop import Harness

FAKE = Path(__file__).parents[1] / "runtime" / "fake_slurm.py"
LOST = {"exits": {"n0": 0}, "rc": 1}  # n1 never reported: node failure -> requeue
OK = {"exits": {"n0": 0, "n1": 0}, "rc": 0}


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Fake scontrol/sbatch on PATH; returns the calls log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("scontrol", "sbatch"):
        path = bin_dir / name
        path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" {name} "$@"\n')
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    calls = tmp_path / "calls.jsonl"
    scenario = tmp_path / "scenario.json"
    scenario.write_text("{}")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_CALLS", str(calls))
    monkeypatch.setenv("FAKE_SCENARIO", str(scenario))
    monkeypatch.delenv("SLURM_CONF", raising=False)
    return calls


def scontrol_calls(calls: Path) -> list[list[str]]:
    if not calls.exists():
        return []
    rows = [json.loads(line) for line in calls.read_text().splitlines()]
    return [r["argv"][1:] for r in rows if r["argv"][0] == "scontrol"]


def chain(tmp_path: Path, name: str, job_id: int) -> Path:
    job_dir = tmp_path / "jobs" / name
    ledger.append(job_dir, "attempt_start", attempt=0, job_id=job_id, nodes="n[0-1]")
    return job_dir


def test_dependent_is_registered_moved_to_the_new_id_and_released(tmp_path, fake):
    pred = chain(tmp_path, "pred", 500)
    prepared = prepare(Predecessor(After("500", "ok"), pred), None)
    assert (prepared.dependency, prepared.hold) == ("afterok:500", True)
    # between sbatch and the registration the chain went on under a new id
    ledger.append(pred, "resubmitted", job_id=500, new_job_id=1001)
    dep = tmp_path / "jobs" / "dep"
    dep.mkdir()
    attach(prepared, 42, dep)
    assert scontrol_calls(fake) == [
        ["update", "JobId=42", "Dependency=afterok:1001"],
        ["release", "42"],
    ]
    (entry,) = [json.loads(x) for x in (pred / DEPENDENTS).read_text().splitlines()]
    assert entry["job_id"] == 42 and entry["when"] == "ok"
    assert json.loads((dep / "after.json").read_text())["job_dir"] == str(pred)


def test_unmoved_chain_is_only_released_and_a_users_hold_is_kept(tmp_path, fake):
    pred = chain(tmp_path, "pred", 500)
    prepared = prepare(Predecessor(After("500", "any"), pred), "singleton")
    assert prepared.dependency == "afterany:500,singleton"
    (tmp_path / "d").mkdir()
    attach(prepared, 42, tmp_path / "d", release=False)
    assert scontrol_calls(fake) == []


def test_an_ended_chain_needs_no_dependency_or_can_never_satisfy_it(tmp_path):
    pred = chain(tmp_path, "pred", 500)
    ledger.append(pred, "final", job_id=500, state="FAILED", reason="x")
    notok = prepare(Predecessor(After("500", "notok"), pred), None)
    assert (notok.dependency, notok.hold) == (None, False)
    with pytest.raises(InputError, match="ended FAILED: --after 500:ok can never be satisfied"):
        prepare(Predecessor(After("500", "ok"), pred), None)


def test_resolve_finds_snrun_chains_and_leaves_other_jobs_to_slurm(tmp_path):
    root = tmp_path / "jobs"
    pred = chain(tmp_path, "pred", 500)
    (pred / "plan.json").write_text("{}")
    (root / "by-id").mkdir()
    (root / "by-id" / "500").symlink_to("../pred")
    assert resolve(After("500"), root).job_dir == pred.resolve()
    plain = resolve(After("777", "any"), root)
    assert plain.job_dir is None and prepare(plain, None).dependency == "afterany:777"
    assert prepare(plain, None).hold is False
    with pytest.raises(InputError):
        resolve(After(str(tmp_path / "nope")), root)


def test_sweep_dependents_wait_for_the_array_and_every_resubmitted_task(tmp_path, fake):
    sweep = tmp_path / "jobs" / "sw"
    tasks = [chain(tmp_path, f"sw/tasks/{i}", 901 + i) for i in range(2)]
    data = {"array_job_id": 900, "tasks": [{"task": i, "job_dir": str(d)} for i, d in
                                           enumerate(tasks)]}  # fmt: skip
    (sweep / "sweep.json").write_text(json.dumps(data))
    (sweep / DEPENDENTS).write_text(json.dumps({"job_id": 42, "when": "ok", "rest": None}) + "\n")
    ledger.append(tasks[1], "resubmitted", job_id=902, new_job_id=1001)
    assert rewrite_dependents(tasks[1], sweep) == []
    assert scontrol_calls(fake) == [["update", "JobId=42", "Dependency=afterok:900:1001"]]
    assert Predecessor(After("900"), sweep, is_sweep=True).final_state() is None


@pytest.fixture
def h(tmp_path, monkeypatch) -> Harness:
    return Harness(tmp_path, monkeypatch)


def test_supervisor_moves_dependents_to_its_resubmission_before_it_ends(h):
    entry = {"job_id": 777, "when": "ok", "rest": "singleton"}
    (h.job_dir / DEPENDENTS).write_text(json.dumps(entry) + "\n")
    request = {"sbatch_args": ["--nodes=2", "--dependency=afterok:5", "--hold"],
               "heterogeneous": False}  # fmt: skip
    scenario = {"attempts": [LOST], "bad_nodes": ["n1"], "requeue_fails": True}
    assert h.run(scenario, request=request) is ExitCode.OK
    (args,) = h.commands("sbatch")
    assert args == ["--parsable", "--dependency=afterany:500", "--exclude=n1", "--nodes=2"]
    updates = [c for c in h.commands("scontrol") if c[0] == "update"]
    assert updates == [["update", "JobId=777", "Dependency=afterok:1001,singleton"]]
    assert "dependents" not in h.events()  # nothing failed


def test_sweep_task_resubmits_as_a_one_task_array_and_links_its_ids(h):
    sweep = {"dir": str(h.job_dir.parent), "task": 2, "params": {"lr": "1e-4"}}
    scenario = {"attempts": [LOST], "bad_nodes": ["n1"], "requeue_fails": True}
    assert h.run(scenario, sweep=sweep) is ExitCode.OK
    (args,) = h.commands("sbatch")
    assert "--array=2" in args
    by_id = h.job_dir.parent.parent / "by-id"
    assert (by_id / "1001").resolve() == h.job_dir.resolve()
    assert (by_id / "500").resolve() == h.job_dir.resolve()  # linked when it started


def test_a_task_under_the_arrays_own_id_keeps_the_sweeps_link(h):
    """Slurm runs one task under the array's job id: by-id/<that id> stays the sweep's."""
    sweep = {"dir": str(h.job_dir.parent), "task": 0, "params": {"lr": "1"}}
    by_id = h.job_dir.parent.parent / "by-id"
    by_id.mkdir()
    (by_id / "500").symlink_to("../jobs")
    assert h.run({"attempts": [OK]}, sweep=sweep) is ExitCode.OK
    assert (by_id / "500").resolve() == h.job_dir.parent.resolve()


def test_sweep_env_and_resubmission_args():
    env = sweep_env({"dir": "/s", "task": 3, "params": {"lr": "1e-4", "seed": "0"}})
    assert env["SNRUN_PARAM_LR"] == "1e-4" and env["SNRUN_PARAM_SEED"] == "0"
    assert env["SNRUN_SWEEP_TASK"] == "3" and json.loads(env["SNRUN_SWEEP_PARAMS"])["lr"]
    assert sweep_env(None) == {}
    args = ["-d", "afterok:1", "--nodes=2", "-dafterany:3", "-H", "--dependency", "x", "-D", "/w"]
    assert resubmission_args(args) == ["--nodes=2", "-D", "/w"]


def test_then_takes_a_job_handle_and_refuses_a_chain_that_ended_the_wrong_way(tmp_path):
    """api.chain.then(job, spec): a handle (anything with job_dir) names its chain; a chain
    that ended FAILED can never satisfy 'ok', refused before Slurm is asked anything."""
    from slurm_supernode.api.chain import then
    from slurm_supernode.launch.jobspec import JobSpec

    pred = chain(tmp_path, "pred", 500)
    (pred / "plan.json").write_text("{}")
    ledger.append(pred, "final", job_id=500, state="FAILED", reason="x")

    class Handle:
        job_dir = pred

    spec = JobSpec(program="eval.py", site="local", jobs_dir=str(tmp_path / "jobs"))
    with pytest.raises(InputError, match="ended FAILED: after .*pred:ok can never"):
        then(Handle(), spec, "ok")
    with pytest.raises(InputError, match="when must be one of .* not str 'later'"):
        then(Handle(), spec, "later")


def test_job_then_refuses_like_then_and_keeps_the_handles_watcher(tmp_path, monkeypatch):
    """Job.then(spec, when) is the method form of api.then: the same refusal before anything
    is planned; a dependent it submits is a Job on the predecessor's watcher."""
    from slurm_supernode.api import submit_plan as submit_plan_module
    from slurm_supernode.api.job import Job
    from slurm_supernode.api.submit_plan import Submitted
    from slurm_supernode.api.watcher import Watcher
    from slurm_supernode.launch.jobspec import JobSpec

    pred = chain(tmp_path, "pred", 500)
    (pred / "plan.json").write_text("{}")
    watcher = Watcher(query=lambda ids: [], lookup=lambda job_id: None)
    handle = Job(pred, 500, watcher=watcher)
    spec = JobSpec(program="eval.py", site="local", jobs_dir=str(tmp_path / "jobs"))
    with pytest.raises(InputError, match="when must be one of .* not str 'later'"):
        handle.then(spec, "later")

    asked = []

    def fake_submit_plan(job_plan, *, after=None):
        asked.append(after)
        return Submitted(tmp_path / "jobs" / "dep", 501)

    monkeypatch.setattr(submit_plan_module, "submit_plan", fake_submit_plan)
    monkeypatch.setattr(submit_plan_module, "plan", lambda spec, need_slurm: "the plan")
    dep = handle.then(spec, "any")
    assert (dep.job_id, dep.job_dir.name) == (501, "dep")
    assert dep.watcher is watcher and 501 in watcher.watched
    assert [(a.job, a.when) for a in asked] == [(str(pred), "any")]
