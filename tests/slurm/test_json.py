"""`scontrol show job --json` (Slurm >= 23.02): the parser on outputs recorded from real 24.11.5
and 26.05.5 clusters (contrib/minicluster --slurm), and the fall-back to the text form when
scontrol has no --json (22.05)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from slurm_supernode.errors import SlurmError
from slurm_supernode.slurm import job_lookup, jobinfo
from slurm_supernode.slurm.parse import json_exit_code, json_number

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"
VERSIONS = ["24.11", "26.05"]


def recorded_jobs(name: str) -> list[jobinfo.JobInfo]:
    return jobinfo._json_jobs((DATA / name).read_text())


@pytest.mark.parametrize("version", VERSIONS)
def test_failed_job_has_both_exit_codes(version):
    (info,) = recorded_jobs(f"json_job_failed_{version}.json")
    assert (info.name, str(info.state), info.reason) == ("failing", "FAILED", "NonZeroExitCode")
    assert (info.exit_code, info.exit_signal, info.derived_exit_code) == (1, 0, 3)
    assert info.ended and info.num_nodes == 1 and info.nodelist and info.nodelist.startswith("n")
    assert info.restart_count == 0 and info.partition == "main" and info.start_time is not None
    assert info.stdout == "/dev/null" and info.source == "scontrol"


@pytest.mark.parametrize("version", VERSIONS)
def test_held_job_is_pending_without_nodes(version):
    (info,) = recorded_jobs(f"json_job_pending_{version}.json")
    assert (str(info.state), info.reason, info.num_nodes) == ("PENDING", "JobHeldUser", 2)
    assert info.pending and not info.ended and info.nodelist is None


def test_json_values():
    assert json_number({"set": True, "infinite": False, "number": 4}) == 4
    assert json_number({"set": False, "number": 4}) is None
    assert json_number({"set": True, "infinite": True, "number": 0}) is None
    assert json_number(7) == 7 and json_number(True) is None and json_number("7") is None
    signalled = {"return_code": {"set": False, "number": 0}, "signal": {"id": {"number": 15}}}
    assert json_exit_code(signalled) == (0, 15)
    assert json_exit_code(None) == (0, 0)


def test_not_json_is_a_slurm_error():
    with pytest.raises(SlurmError, match="no JSON"):
        jobinfo._json_jobs("JobId=1 JobName=x")
    with pytest.raises(SlurmError, match="'jobs'"):
        jobinfo._json_jobs('{"errors": []}')


@pytest.fixture
def fake_scontrol(tmp_path, monkeypatch):
    def make(body: str) -> None:
        path = tmp_path / "scontrol"
        path.write_text("#!/bin/bash\n" + body + "\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin:/bin")

    return make


def test_scontrol_with_json_is_asked_once(fake_scontrol, tmp_path):
    sample = DATA / "json_job_failed_24.11.json"
    log = tmp_path / "calls"
    fake_scontrol(f'echo "$*" >>{log}; cat {sample}')
    (info,) = job_lookup.controller_jobs(6)
    assert info.derived_exit_code == 3
    assert log.read_text().splitlines() == ["show job --json 6"]


def test_scontrol_without_json_falls_back_to_text(fake_scontrol, tmp_path):
    """22.05: `unrecognized option '--json'`, then the -o text form (recorded from 22.05)."""
    text = DATA / "show_job_failed.txt"
    log = tmp_path / "calls"
    fake_scontrol(
        f'echo "$*" >>{log}\n'
        'case " $* " in *" --json "*)\n'
        "  echo \"scontrol: unrecognized option '--json'\" >&2; exit 1 ;;\n"
        "esac\n"
        f"cat {text}"
    )
    (info,) = job_lookup.controller_jobs()
    assert str(info.state) == "FAILED" and info.source == "scontrol"
    assert log.read_text().splitlines() == ["show job --json", "show job -o"]


def test_unknown_job_is_empty_in_both_forms(fake_scontrol):
    fake_scontrol('echo \'{"jobs": [], "errors": []}\'')
    assert job_lookup.controller_jobs(99) == []
    fake_scontrol("echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1")
    assert job_lookup.controller_jobs(99) == []
