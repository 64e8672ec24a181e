"""The doctor from Python: submit, wait, judge and write the page; the facts judged again;
a job that wrote no facts is a JobError naming its cause. Slurm calls are fakes here
(tests/integration/test_doctor_cluster.py runs the real job)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from slurm_supernode.api import doctor
from slurm_supernode.doctor.job import FACTS_FILE, DoctorJob
from slurm_supernode.errors import JobError
from slurm_supernode.slurm.state import JobState
from tests.api.helpers import site_file
from tests.doctor.helpers import facts


def _node(name: str, *, drained: bool = False, reason: str | None = None):
    return SimpleNamespace(name=name, state="idle", drained=drained, reason=reason)


@pytest.fixture
def fake_job(monkeypatch):
    """sbatch that 'runs' the doctor job at once (writing ``what`` into its job dir), and
    scontrol answers for the wait and the nodes."""
    from slurm_supernode.launch import facts as cluster_facts
    from slurm_supernode.launch import job
    from slurm_supernode.slurm import jobs, nodes

    state = SimpleNamespace(plans=[], writes=None, nodes={}, waited=[])

    def submit(plan):
        state.plans.append(plan)
        (plan.job_dir / "logs").mkdir(parents=True)
        if state.writes is not None:
            (plan.job_dir / FACTS_FILE).write_text(json.dumps(state.writes.to_dict()))
        return 77

    def wait_for(job_id, states, timeout, poll=0.5):
        state.waited.append((job_id, timeout))
        return SimpleNamespace(state=JobState.from_text("COMPLETED"), exit_code=0)

    monkeypatch.setattr(cluster_facts, "gather_facts", lambda site, required, **_kw: None)
    monkeypatch.setattr(job, "submit_job", submit)
    monkeypatch.setattr(jobs, "wait_for", wait_for)
    monkeypatch.setattr(
        nodes, "node_infos", lambda names: [state.nodes.get(n, _node(n)) for n in names]
    )
    return state


def test_run_doctor_submits_waits_judges_and_writes_the_page(tmp_path, fake_job):
    slow = lambda scope, hosts: 30.0 if "n5" in hosts else 100.0  # noqa: E731
    fake_job.writes = facts(busbw_of=slow)
    fake_job.nodes["n6"] = _node("n6", drained=True, reason="admin: fan")
    said: list[str] = []
    job = DoctorJob(hosts=("n4", "n5", "n6", "n7"), site_arg=site_file(tmp_path))
    outcome = doctor.run_doctor(job, timeout=120, progress=said.append)
    assert outcome.job_id == 77 and fake_job.waited == [(77, 120)]
    assert said == [f"doctor job 77 submitted; waiting ({outcome.job_dir})"]
    assert outcome.status == 2 and outcome.report.status == 2
    text = json.dumps(outcome.report.to_dict())
    assert "n5 is slow in both pairings" in text
    assert "admin: fan" in text  # the login node's view: n6 drained
    assert outcome.html == str(outcome.job_dir / "doctor.html")
    assert (outcome.job_dir / "doctor.html").read_text().startswith("<!DOCTYPE html>")
    assert json.loads((outcome.job_dir / "doctor.json").read_text())["verdict"] == "fail"
    (plan,) = fake_job.plans
    assert "--nodelist=n[4-7]" in plan.request.sbatch_args()


def test_a_job_without_facts_is_a_job_error_with_its_log(tmp_path, fake_job):
    fake_job.writes = None
    with pytest.raises(JobError, match="doctor job 77 ended") as err:
        doctor.run_doctor(DoctorJob(count=1, site_arg=site_file(tmp_path)), timeout=5)
    assert "COMPLETED exit 0" in str(err.value) and "logs" in (err.value.hint or "")


def test_plan_submits_nothing_and_judge_facts_file_needs_no_slurm(tmp_path, fake_job):
    site = site_file(tmp_path)
    plan = doctor.plan_doctor_job(DoctorJob(count=1, nproc_per_node=2, site_arg=site))
    assert "doctor --in-job" in plan.script and not fake_job.plans
    path = tmp_path / "f.json"
    path.write_text(json.dumps(facts(busbw_of=lambda s, h: 400.0).to_dict()))
    outcome = doctor.judge_facts_file(str(path), site=site)
    assert outcome.status == 0 and outcome.html is None and outcome.job_id is None
    assert outcome.report.to_dict()["verdict"] == "ok"
