"""Fixtures of the API tests: a fake Slurm controller (``slurm``)."""

from __future__ import annotations

import copy
import json
import stat
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    """A fake scontrol whose answer lists the jobs ``set_jobs`` gives; ``calls()`` what it was
    asked, one line per run."""
    template = json.loads((DATA / "json_job_pending_24.11.json").read_text())
    answer, log = tmp_path / "answer.json", tmp_path / "calls"
    log.write_text("")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "scontrol"
    fake.write_text(f'#!/bin/bash\necho "$*" >>{log}\ncat {answer}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    monkeypatch.setenv("SNRUN_SLURM_BACKEND", "cli")  # the command line, never pyslurm

    def set_jobs(states: dict[int, str]) -> None:
        doc = copy.deepcopy(template)
        entry = doc["jobs"][0]
        doc["jobs"] = []
        for job_id, state in states.items():
            job = copy.deepcopy(entry)
            job["job_id"], job["job_state"] = job_id, [state]
            doc["jobs"].append(job)
        answer.write_text(json.dumps(doc))

    class Slurm:
        pass

    s = Slurm()
    s.set_jobs = set_jobs
    s.calls = lambda: log.read_text().splitlines()
    return s
