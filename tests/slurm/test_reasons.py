"""A job's reason is one text whatever backend read it (25.11: pyslurm's
``RaisedSignal:9(Killed)`` and the command line's ``RaisedSignal`` with the signal in the exit
code), and a pending job's reason in words, with whether it can never start."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from slurm_supernode.slurm.jobinfo import job_from_json, job_from_record, job_from_sacct_json
from slurm_supernode.slurm.parse import parse_kv_line
from slurm_supernode.slurm.pyslurm_records import job_from_pyslurm
from slurm_supernode.slurm.reasons import job_reason, pending_reason
from tests.slurm.test_pyslurm_backend import fake_job

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"
KILLED = {
    "status": ["SIGNALED"],
    "return_code": {"set": True, "infinite": False, "number": 0},
    "signal": {"id": {"set": True, "infinite": False, "number": 9}, "name": "KILL"},
}


def killed_json() -> dict:
    """24.11's recorded failed job, as 25.11's command line words a job killed by SIGKILL."""
    doc = json.loads((DATA / "json_job_failed_24.11.json").read_text())
    job = copy.deepcopy(doc["jobs"][0])
    job["state_reason"], job["exit_code"] = "RaisedSignal", KILLED
    return job


def test_both_backends_give_a_killed_job_the_same_reason():
    cli = job_from_json(killed_json())
    pyslurm = job_from_pyslurm(
        fake_job(state="FAILED", state_reason="RaisedSignal:9(Killed)", exit_code_signal=9)
    )
    assert cli.exit_signal == pyslurm.exit_signal == 9
    assert cli.reason == pyslurm.reason == "RaisedSignal:9(Killed)"


def test_the_text_forms_and_accounting_give_it_too():
    text = (DATA / "show_job_failed.txt").read_text().strip()
    text = text.replace("Reason=NonZeroExitCode", "Reason=RaisedSignal")
    text = text.replace("ExitCode=3:0", "ExitCode=0:9")
    rec = job_from_record(parse_kv_line(text))
    assert (rec.exit_signal, rec.reason) == (9, "RaisedSignal:9(Killed)")
    doc = json.loads((DATA / "sacct_json_failed_24.11.json").read_text())
    job = copy.deepcopy(doc["jobs"][0])
    job["state"]["reason"], job["exit_code"] = "RaisedSignal", KILLED
    assert job_from_sacct_json(job).reason == "RaisedSignal:9(Killed)"


@pytest.mark.parametrize(
    ("given", "signal", "want"),
    [
        ("RaisedSignal", 15, "RaisedSignal:15(Terminated)"),
        ("RaisedSignal:15(Terminated)", 0, "RaisedSignal:15(Terminated)"),
        ("RaisedSignal", 0, "RaisedSignal"),
        ("NonZeroExitCode", 0, "NonZeroExitCode"),
        ("None", 0, None),
        (None, 9, None),
    ],
)
def test_job_reason(given, signal, want):
    assert job_reason(given, signal) == want


@pytest.mark.parametrize(
    ("code", "never"),
    [
        ("DependencyNeverSatisfied", True),
        ("PartitionNodeLimit", True),
        ("PartitionTimeLimit", True),
        ("BadConstraints", True),
        ("QOSMaxNodePerJobLimit", True),
        ("Resources", False),
        ("NvidiaImexChannels", False),  # 26.05's squeue, every IMEX channel held (measured)
        ("Priority", False),
        ("Dependency", False),
        ("ReqNodeNotAvail, UnavailableNodes:n[1-2]", False),
        ("AssocGrpNodeLimit", False),
        ("SomethingNew", False),
    ],
)
def test_pending_reasons_in_words(code, never):
    reason = pending_reason(code)
    assert reason is not None and reason.code == code and reason.never is never
    assert str(reason).startswith(f"{code}: ") and reason.words
    assert pending_reason(None) is None


def test_imex_channel_exhaustion_in_words():
    assert "IMEX channel" in pending_reason("NvidiaImexChannels").words
