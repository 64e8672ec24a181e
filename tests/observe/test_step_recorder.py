"""The rank's step recorder: batched writes, figures carried to the next step, checkpoint age,
a full disk said once."""

from __future__ import annotations

import errno
import os

from slurm_supernode.observe import step_recorder
from slurm_supernode.observe.records import read
from slurm_supernode.observe.step_recorder import FLUSH_SECONDS, StepRecorder, from_environ


def _clock(times):
    it = iter(times)
    return lambda: next(it)


def test_batches_and_durations(tmp_path):
    path = tmp_path / "rank-0.steps.jsonl"
    t = [0.0, 1.0, 1.5, 2.0, FLUSH_SECONDS + 0.5, FLUSH_SECONDS + 0.5, 9.0, 9.0]
    rec = StepRecorder(path, 0, "n1", samples_per_step=32, clock=_clock(t))
    rec.on_step()
    rec.note(loss=2.5, samples=16)
    rec.on_step()
    assert not path.exists()  # kept in memory until FLUSH_SECONDS passed
    rec.on_step()  # at 2.5 s: the batch is written
    got = list(read(path))
    assert [(r.step, r.seconds, r.samples, r.loss) for r in got] == [
        (1, 1.0, 32, None),
        (2, 0.5, 16, 2.5),
        (3, 0.5, 32, None),
    ]
    rec.on_step()
    rec.flush()
    assert [r.step for r in read(path)] == [1, 2, 3, 4]


def test_checkpoint_age_from_the_checkpoint_folder(tmp_path):
    ckpt = tmp_path / "ckpt"
    (ckpt / "step-10").mkdir(parents=True)
    os.utime(ckpt / "step-10", (1000.0, 1000.0))
    rec = StepRecorder(
        tmp_path / "s.jsonl", 0, "n1", checkpoint_dir=str(ckpt), clock=_clock([0.0, 1.0, 1.0])
    )
    rec.on_step()
    rec.flush()
    assert [r.checkpoint_t for r in read(tmp_path / "s.jsonl")] == [1000.0]


def test_full_disk_is_said_once(tmp_path, capsys, monkeypatch):
    def full(path, records):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(step_recorder, "append", full)
    rec = StepRecorder(tmp_path / "s.jsonl", 0, "n1")
    for _ in range(3):
        rec.on_step()
        rec.flush()
    assert capsys.readouterr().err.count("No space left") == 1


def test_from_environ_needs_an_snrun_rank(tmp_path):
    assert from_environ({}) is None
    base = {"SNRUN_JOB_DIR": str(tmp_path), "SNRUN_NODE": "n1", "RANK": "2", "SNRUN_ATTEMPT": "4"}
    rec = from_environ(
        base | {"SNRUN_TOKENS_PER_STEP": "nope", "LOCAL_RANK": "1", "SNRUN_CHECKPOINT_DIR": "/c"}
    )
    assert rec is not None and rec.path == tmp_path / "observe" / "4" / "rank-2.steps.jsonl"
    assert rec.tokens_per_step is None and rec.checkpoint_dir is None  # only local rank 0 looks
    assert (
        from_environ(base | {"LOCAL_RANK": "0", "SNRUN_CHECKPOINT_DIR": "/c"}).checkpoint_dir
        == "/c"
    )
