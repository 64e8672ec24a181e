"""The per-node agent's command line has one builder (launch/agent_argv.py): the supervisor's
srun step, the bench and doctor batch script and the doctor's step inside a running job all
start the agent with what it returns."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from slurm_supernode.bench.submit import BenchJob, plan_bench
from slurm_supernode.doctor import job as doctor_job
from slurm_supernode.launch.agent_argv import agent_argv
from slurm_supernode.runtime.agent_step import srun_command
from slurm_supernode.site.loader import load_site

LOCAL = Path(__file__).resolve().parents[2] / "site-configs" / "local.yaml"


def test_the_program_follows_a_double_dash_verbatim() -> None:
    got = agent_argv("/py", Path("/j d"), ["t.py", "--", "$(x)"])
    assert got == [
        "/py",
        "-m",
        "slurm_supernode",
        "agent",
        "--job-dir",
        "/j d",
        "--",
        "t.py",
        "--",
        "$(x)",
    ]
    assert agent_argv("/py", "/j", []) == [
        "/py",
        "-m",
        "slurm_supernode",
        "agent",
        "--job-dir",
        "/j",
    ]


def test_the_supervisors_step_ends_with_the_agents_argv(tmp_path: Path) -> None:
    cmd = srun_command("py", tmp_path, ["n0", "n1"], 0, ["t.py", "a"])
    assert cmd[-9:] == agent_argv("py", tmp_path, ["t.py", "a"])


def test_the_bench_script_and_the_doctors_step_start_the_same_agent(
    tmp_path: Path, monkeypatch
) -> None:
    site = load_site(str(LOCAL))
    plan = plan_bench(site, BenchJob(count=1), jobs_root=tmp_path / "jobs")
    want = agent_argv(plan.inputs.python, plan.job_dir, plan.inputs.program_argv)
    assert f"  {shlex.join(want)} \\\n" in plan.script
    assert subprocess.run(["bash", "-n"], input=plan.script, text=True).returncode == 0

    seen: list[list[str]] = []

    def overlap_step(job_id, nodelist, nodes, argv, **kw):
        seen.append(list(argv))
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr("slurm_supernode.slurm.steps.overlap_step", overlap_step)
    hosts = tuple(site.supernodes[0].hostnames)
    doc = doctor_job.plan_doctor(
        site, doctor_job.DoctorJob(hosts=hosts), jobs_root=tmp_path / "jobs"
    )
    assert doctor_job.run_in_job(doc, 7, hosts, timeout=5) == 0
    assert seen == [agent_argv(doc.inputs.python, doc.job_dir, doc.inputs.program_argv)]
