"""The job inputs (plan.json): typed, versioned, strict both ways."""

from __future__ import annotations

import json

import pytest

from slurm_supernode.errors import InputError, JobError
from slurm_supernode.launch.inputs import SCHEMA, JobInputs
from tests.launch.test_render import plan


def test_plan_writes_inputs_that_read_back_equal(tmp_path):
    p = plan(tmp_path)
    (tmp_path / "plan.json").write_text(p.inputs.to_json())
    back = JobInputs.read(tmp_path)
    assert back == p.inputs
    assert json.loads(p.inputs.to_json())["schema"] == SCHEMA


def test_template_context_comes_from_the_inputs(tmp_path):
    p = plan(tmp_path)
    assert f"--job-dir {p.job_dir}" in p.script or str(p.job_dir) in p.script
    assert p.inputs.python in p.script


def _data(tmp_path):
    return plan(tmp_path).inputs.to_dict()


def test_unknown_key_is_an_error(tmp_path):
    data = _data(tmp_path) | {"hang_timout": 5}
    with pytest.raises(JobError, match="unknown key.*hang_timout"):
        JobInputs.from_dict(data)


def test_missing_key_is_an_error(tmp_path):
    data = _data(tmp_path)
    del data["hang_timeout"]
    with pytest.raises(JobError, match="missing key.*hang_timeout"):
        JobInputs.from_dict(data)


def test_wrong_type_and_old_schema_are_errors(tmp_path):
    with pytest.raises(JobError, match="'nodes' has the wrong type"):
        JobInputs.from_dict(_data(tmp_path) | {"nodes": "2"})
    with pytest.raises(JobError, match="'preflight' has the wrong type"):
        JobInputs.from_dict(_data(tmp_path) | {"preflight": 1})
    old = _data(tmp_path)
    del old["schema"]
    with pytest.raises(JobError, match="schema None") as err:
        JobInputs.from_dict(old)
    assert "submit the job again" in (err.value.hint or "")


def test_unreadable_file_is_one_line(tmp_path):
    (tmp_path / "plan.json").write_text("{not json")
    with pytest.raises(JobError) as err:
        JobInputs.read(tmp_path)
    assert "plan.json" in str(err.value) and "\n" not in str(err.value)


def test_hang_timeout_is_written_at_submit(tmp_path):
    """It used to be read in the job but never written."""
    p = plan(tmp_path, env=(("SNRUN_HANG_TIMEOUT", "300"), ("SNRUN_HANG_STARTUP", "900")))
    assert (p.inputs.hang_timeout, p.inputs.hang_startup) == (300.0, 900.0)
    assert (plan(tmp_path).inputs.hang_timeout, plan(tmp_path).inputs.hang_startup) == (0.0, None)
    with pytest.raises(InputError, match="SNRUN_HANG_TIMEOUT='soon'") as err:
        plan(tmp_path, env=(("SNRUN_HANG_TIMEOUT", "soon"),))
    assert err.value.where == "--env SNRUN_HANG_TIMEOUT"
