"""`snrun status` without a job lists the user's recent chains and sweeps with one Slurm query
for all of them, never one per chain or sweep (issue #26). Slurm is the fake controller of
conftest.py, which logs every run of scontrol."""

from __future__ import annotations

import json
from pathlib import Path

from slurm_supernode.api.status import recent
from slurm_supernode.chain import ledger
from slurm_supernode.cli.main import main

CHAINS, SWEEPS, TASKS = 6, 3, 4


def jobs_root(tmp_path: Path) -> Path:
    """Running chains (jobs 7000..) and sweeps of running tasks (jobs 8000..) under one root."""
    root = tmp_path / "jobs"
    for i in range(CHAINS):
        d = root / f"train.py-{i}"
        ledger.append(d, "attempt_start", attempt=0, job_id=7000 + i, nodes="n[0-3]")
        (d / "plan.json").write_text("{}")
        (d / "job.json").write_text(json.dumps({"job_ids": [7000 + i]}))
    for s in range(SWEEPS):
        sweep = root / f"sweep-{s}"
        tasks = []
        for t in range(TASKS):
            d = sweep / "tasks" / str(t)
            job_id = 8000 + 10 * s + t
            ledger.append(d, "attempt_start", attempt=0, job_id=job_id, nodes="n[0-3]")
            tasks.append({"task": t, "params": {"seed": str(t)}, "job_dir": str(d)})
        sweep.joinpath("sweep.json").write_text(
            json.dumps({"array_job_id": 8000 + 10 * s, "array": "0-3", "tasks": tasks})
        )
    return root


def running(slurm) -> None:
    jobs = {7000 + i: "RUNNING" for i in range(CHAINS)}
    jobs |= {8000 + 10 * s + t: "RUNNING" for s in range(SWEEPS) for t in range(TASKS)}
    slurm.set_jobs(jobs)


def test_recent_chains_and_sweeps_are_one_query(tmp_path, slurm):
    root = jobs_root(tmp_path)
    running(slurm)
    _, rows = recent(10, jobs_dir=root)
    assert len(rows) == CHAINS + SWEEPS
    assert {r["state"] for r in rows} == {"RUNNING"}
    assert slurm.calls() == ["show job --json"]


def test_the_command_line_asks_once_too(tmp_path, slurm, capsys):
    root = jobs_root(tmp_path)
    running(slurm)
    assert main(["status", "--jobs-dir", str(root), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == CHAINS + SWEEPS and {r["state"] for r in rows} == {"RUNNING"}
    assert slurm.calls() == ["show job --json"]


def test_chains_that_ended_with_a_final_record_ask_nothing(tmp_path, slurm):
    root = tmp_path / "jobs"
    for i in range(3):
        d = root / f"done-{i}"
        ledger.append(d, "attempt_start", attempt=0, job_id=9000 + i, nodes="n0")
        ledger.append(d, "final", job_id=9000 + i, state="COMPLETED", reason="")
        (d / "plan.json").write_text("{}")
    slurm.set_jobs({})
    _, rows = recent(10, jobs_dir=root)
    assert [r["state"] for r in rows] == ["COMPLETED"] * 3
    assert slurm.calls() == []


def test_n_rows_exactly_newest_first_across_chains_and_sweeps(tmp_path, slurm, capsys):
    """`snrun status -n 4`: four rows, the most recently active first, chains and sweeps
    together (not N chains then N sweeps)."""
    import os

    root = jobs_root(tmp_path)
    running(slurm)
    names = [f"train.py-{i}" for i in range(CHAINS)] + [f"sweep-{s}" for s in range(SWEEPS)]
    order = names[::2] + names[1::2]  # activity interleaved: chains and sweeps mixed
    for age, name in enumerate(order):  # the first of ``order`` is the newest
        d = root / name
        when = 1_800_000_000 - 60 * age
        for path in (d, d / "ledger.jsonl"):
            if path.exists():
                os.utime(path, (when, when))
    assert main(["status", "--jobs-dir", str(root), "-n", "4", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [Path(r["job_dir"]).name for r in rows] == order[:4]
    assert main(["status", "--jobs-dir", str(root), "-n", "4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + 4 and [line.split()[-1] for line in lines[1:]] == [
        str(root / name) for name in order[:4]
    ]
