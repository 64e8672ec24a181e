"""`snrun profile JOB` / api.profile_request: the request file a running job's ranks take, and
one rank's window (runtime/comm_window) serving it once, with torch's real CPU profiler."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm_supernode.api.profile_request import request_profile
from slurm_supernode.chain import ledger
from slurm_supernode.cli.main import main
from slurm_supernode.errors import InputError
from slurm_supernode.observe.records import CommShare, attempt_dir, comm_path, read


def running_job(tmp_path: Path, *, ended: bool = False) -> Path:
    d = tmp_path / "jobs" / "train.py-1"
    d.mkdir(parents=True)
    (d / "plan.json").write_text("{}")
    ledger.append(d, "attempt_start", attempt=0, job_id=4242, nodes="n[0-1]")
    ledger.append(d, "attempt_end", attempt=0, job_id=4242, exit_code=1)
    ledger.append(d, "attempt_start", attempt=1, job_id=4243, nodes="n[0-1]")
    if ended:
        ledger.append(d, "attempt_end", attempt=1, job_id=4243, exit_code=0)
    return d


def test_request_goes_to_the_running_attempt(tmp_path):
    d = running_job(tmp_path)
    req = request_profile(d, steps=4)
    assert req.attempt == 1 and req.steps == 4
    assert req.path == attempt_dir(d, 1) / "profile-request.json"
    assert json.loads(req.path.read_text())["steps"] == 4
    assert req.traces_dir == attempt_dir(d, 1) / "traces"
    assert not list(req.path.parent.glob("*.tmp*"))  # written through a rename
    assert request_profile(d).steps == 3


def test_an_ended_job_is_refused(tmp_path):
    d = running_job(tmp_path, ended=True)
    with pytest.raises(InputError, match="not running") as exc:
        request_profile(d)
    assert exc.value.where == "job"
    assert not (attempt_dir(d, 1) / "profile-request.json").exists()


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"steps": 0}, "steps"),
        ({"steps": 2.0}, "steps"),
        ({"steps": True}, "steps"),
        ({"steps": 10_000}, "steps"),
        ({"job": 1.5}, "job"),
        ({"jobs_dir": 3}, "jobs_dir"),
    ],
)
def test_arguments_are_checked(tmp_path, kwargs, where):
    args = {"job": running_job(tmp_path)} | kwargs
    with pytest.raises(InputError) as exc:
        request_profile(args.pop("job"), **args)
    assert exc.value.where == where


def test_cli_says_where_the_traces_will_be(tmp_path, capsys):
    d = running_job(tmp_path)
    assert main(["profile", str(d), "--steps", "2"]) == 0
    out = capsys.readouterr().out
    assert "next 2 steps" in out and str(attempt_dir(d, 1) / "traces") in out
    assert "snrun metrics" in out
    assert main(["profile", str(d), "--steps", "0"]) != 0


def test_a_rank_profiles_the_requested_window_once(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    from slurm_supernode.runtime import comm_window

    monkeypatch.setattr(comm_window, "LOOK_EVERY", 0.0)
    d = running_job(tmp_path)
    window = comm_window.CommWindow(
        d, 1, 0, "n0", after=0, steps=0, environ={}
    )  # profiling off: only a request opens a window
    x = torch.ones(64, 64)
    for step in range(1, 4):
        x = x @ x / 64
        window.after_step(step)
    assert not comm_path(d, 1, 0).exists()
    request_profile(d, steps=2)
    for step in range(4, 12):
        x = x @ x / 64
        window.after_step(step)
    records = [r for r in read(comm_path(d, 1, 0)) if isinstance(r, CommShare)]
    assert len(records) == 1 and records[0].steps == 2
    assert (d / records[0].trace).is_file()
    assert (d / records[0].trace).parent == attempt_dir(d, 1) / "traces"


def write_steps(d: Path, attempt: int, rank: int, last: int, t_last: float, step_s: float):
    from slurm_supernode.observe.records import StepRecord, append, steps_path

    append(
        steps_path(d, attempt, rank),
        [
            StepRecord(t=t_last - (last - s) * step_s, rank=rank, node="n0", step=s, seconds=step_s)
            for s in range(max(1, last - 30), last + 1)
        ],
    )


def test_every_rank_is_asked_for_the_same_steps_ahead_of_all(tmp_path):
    import time

    d = running_job(tmp_path)
    now = time.time()
    write_steps(d, 1, 0, 400, now - 1.0, 0.1)  # 10 steps a second
    write_steps(d, 1, 1, 390, now - 1.5, 0.1)  # a rank whose records are further behind
    req = request_profile(d, steps=2)
    asked = json.loads(req.path.read_text())["after_step"]
    assert asked == req.after_step
    # the furthest rank (400) plus what its lag and two 5 s looks cover at 0.1 s a step
    assert 400 + (1.0 + 2.0 + 10.0) / 0.1 <= asked <= 400 + (2.0 + 2.0 + 10.0) / 0.1 + 2


def test_without_step_records_each_rank_starts_at_its_next_step(tmp_path):
    d = running_job(tmp_path)
    req = request_profile(d, steps=2)
    assert req.after_step is None and json.loads(req.path.read_text())["after_step"] is None


def test_ranks_that_look_at_different_steps_profile_the_same_ones(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    from slurm_supernode.runtime import comm_window

    monkeypatch.setattr(comm_window, "LOOK_EVERY", 0.0)
    d = running_job(tmp_path)
    comm_window.request_window(d, 1, 2, 20)
    windows = [
        comm_window.CommWindow(d, 1, rank, "n0", after=0, steps=0, environ={}) for rank in (0, 1)
    ]
    x = torch.ones(32, 32)
    opened: dict[int, int] = {}
    # one rank after the other (torch's profiler is one per process, as each rank is its own)
    for rank, first_look in ((0, 1), (1, 12)):  # rank 1 first looks later: a slower node
        for step in range(first_look, 30):
            x = x @ x / 32
            windows[rank].after_step(step)
            if windows[rank]._prof is not None:
                opened.setdefault(rank, windows[rank]._opened_at)
    assert opened == {0: 20, 1: 20}
    for rank in (0, 1):
        (rec,) = [r for r in read(comm_path(d, 1, rank)) if isinstance(r, CommShare)]
        assert rec.steps == 2


def test_a_rank_already_past_the_step_starts_at_once(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from slurm_supernode.runtime import comm_window

    monkeypatch.setattr(comm_window, "LOOK_EVERY", 0.0)
    d = running_job(tmp_path)
    comm_window.request_window(d, 1, 1, 5)
    window = comm_window.CommWindow(d, 1, 0, "n0", after=0, steps=0, environ={})
    window.after_step(9)
    assert window._prof is not None and window._opened_at == 9
    window.after_step(10)
    assert [r.steps for r in read(comm_path(d, 1, 0)) if isinstance(r, CommShare)] == [1]
