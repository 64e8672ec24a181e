"""api.plan is the dry run: nothing written, a missing script is a refusal that submit raises,
Slurm's absence is said (or raised when Slurm is needed); #SBATCH lines apply, the spec's win."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_supernode import api
from slurm_supernode.errors import InputError, SlurmError


@pytest.fixture
def no_slurm(monkeypatch, tmp_path):
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "absent.conf"))
    monkeypatch.setenv("SNRUN_SITE", "local")
    monkeypatch.chdir(tmp_path)


def test_plan_writes_nothing_and_applies_sbatch_lines(no_slurm, tmp_path: Path):
    script = tmp_path / "train.py"
    script.write_text("#SBATCH -t 7\n#SBATCH -J fromfile\nprint(1)\n")
    plan = api.plan(api.JobSpec(program="train.py", job_name="given", jobs_dir="jobs"))
    assert not (tmp_path / "jobs").exists() and not plan.job_dir.exists()
    assert plan.spec.time == "7" and plan.spec.job_name == "given"  # the spec's own value wins
    assert [d.sbatch_arg for d in plan.directives] == ["-t7", "-Jfromfile"]
    assert plan.facts is None and any("Slurm not reachable" in n for n in plan.notices)
    assert "--time=7" in plan.sbatch_argv() and plan.rank_map().world_size > 0
    assert plan.refusal is None and plan.asked.time is None


def test_a_missing_script_is_a_refusal_that_submit_raises(no_slurm):
    plan = api.plan(api.JobSpec(program="later.py", jobs_dir="jobs"))
    assert isinstance(plan.refusal, InputError) and "later.py" in str(plan.refusal)
    with pytest.raises(InputError, match="later.py"):
        api.submit(plan)
    with pytest.raises(InputError, match="later.py"):  # needed: refused before Slurm is asked
        api.plan(api.JobSpec(program="later.py"), need_slurm=True)


def test_slurm_needed_but_absent_raises(no_slurm, tmp_path: Path):
    (tmp_path / "train.py").write_text("print(1)\n")
    with pytest.raises(SlurmError, match="SLURM_CONF"):
        api.plan(api.JobSpec(program="train.py", jobs_dir="jobs"), need_slurm=True)
    plan = api.plan(api.JobSpec(program="train.py", jobs_dir="jobs"))
    with pytest.raises(SlurmError, match="SLURM_CONF"):  # planned again with Slurm: absent
        api.submit(plan)
    assert not (tmp_path / "jobs").exists()
