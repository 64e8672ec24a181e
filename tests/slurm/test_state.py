"""A job's state is its base state plus flags, read alike from `--json` and the text forms.

Samples recorded from real clusters (contrib/minicluster, an epilog sleeping 8 s on n1 after a
2-node job on n[0-1]): `json_job_completing_24.11.json`, `json_job_requeued_*_24.11.json`
(24.11.5, data_parser v0.0.42), `show_job_completing.txt` and `squeue_completing.txt`
(22.05). The 26.05 (v0.0.45) completing/requeued samples and both configuring samples are
recorded 26.05/24.11 answers with only `job_state`, `nodes`, `node_count`, `name` and
`state_reason` changed to what those states carry (same shape as the recorded ones)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_supernode.slurm import jobinfo, jobs
from slurm_supernode.slurm.parse import parse_kv_records
from slurm_supernode.slurm.state import JobState

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"
VERSIONS = ["24.11", "26.05"]


def recorded(name: str) -> jobinfo.JobInfo:
    (info,) = jobinfo._json_jobs((DATA / name).read_text())
    return info


@pytest.mark.parametrize("version", VERSIONS)
def test_completing_job_has_not_ended_and_gives_no_node_list(version):
    """`["COMPLETED", "COMPLETING"]` with `nodes: n1` (only the node whose epilog still
    runs) is neither ended nor a source of the job's nodes."""
    info = recorded(f"json_job_completing_{version}.json")
    assert info.state.completing and info.state.base in ("COMPLETED", "FAILED")
    assert not info.ended and not info.running and not info.pending
    assert info.nodelist is None and info.state.phase == "COMPLETING"
    assert str(info.state) == f"{info.state.base}+COMPLETING"


@pytest.mark.parametrize("version", VERSIONS)
def test_requeued_job_still_completing_is_pending_but_not_yet_back_in_the_queue(version):
    info = recorded(f"json_job_requeued_completing_{version}.json")
    assert info.pending and info.state.completing and not info.ended
    assert info.nodelist is None and info.state.phase == "COMPLETING"


def test_requeued_job_once_completed_is_plain_pending():
    info = recorded("json_job_requeued_pending_24.11.json")
    assert (info.state, info.reason, info.nodelist) == (JobState("PENDING"), "BeginTime", None)


@pytest.mark.parametrize("version", VERSIONS)
def test_configuring_job_is_not_yet_running(version):
    info = recorded(f"json_job_configuring_{version}.json")
    assert info.state == JobState("RUNNING", frozenset({"CONFIGURING"}))
    assert not info.running and not info.ended and info.state.phase == "CONFIGURING"
    assert info.nodelist == "n4"  # the allocation: CONFIGURING does not change its meaning


def test_text_form_of_a_completing_job_22_05():
    """22.05's `scontrol show job -o` prints JobState=COMPLETING (the base is hidden) and
    NodeList=n1 of a job that ran on n[0-1]."""
    (rec,) = parse_kv_records((DATA / "show_job_completing.txt").read_text())
    info = jobinfo.job_from_record(rec)
    assert rec["NodeList"] == "n1" and info.nodelist is None
    assert info.state == JobState("UNKNOWN", frozenset({"COMPLETING"})) and not info.ended
    state, nodes = (DATA / "squeue_completing.txt").read_text().strip().split("|")
    assert JobState.from_text(state) == info.state and nodes == "n1"


@pytest.mark.parametrize(
    ("text", "base", "flags", "ended"),
    [
        ("COMPLETED", "COMPLETED", set(), True),
        ("CANCELLED by 0", "CANCELLED", set(), True),  # sacct
        ("COMPLETING", "UNKNOWN", {"COMPLETING"}, False),
        ("STAGE_OUT", "UNKNOWN", {"STAGE_OUT"}, False),
        ("REQUEUED", "PENDING", {"REQUEUED"}, False),
        ("REQUEUE_HOLD", "PENDING", {"REQUEUE_HOLD"}, False),
        ("SPECIAL_EXIT", "PENDING", {"SPECIAL_EXIT"}, False),
        ("CONFIGURING", "RUNNING", {"CONFIGURING"}, False),
        ("RESIZING", "RUNNING", {"RESIZING"}, False),
        ("REVOKED", "CANCELLED", {"REVOKED"}, True),
        ("failed+completing", "FAILED", {"COMPLETING"}, False),
        ("", "UNKNOWN", set(), False),
    ],
)
def test_text_words(text, base, flags, ended):
    state = JobState.from_text(text)
    assert (state.base, state.flags, state.ended) == (base, frozenset(flags), ended)


def test_json_lists_in_any_order():
    state = JobState.from_json(["COMPLETING", "TIMEOUT", "UPDATE_DB"])
    assert state == JobState("TIMEOUT", frozenset({"COMPLETING", "UPDATE_DB"}))
    assert state.phase == "COMPLETING" and not state.ended
    held = JobState.from_json(["PENDING", "REQUEUED", "REQUEUE_HOLD"])
    assert held.held and held.pending and held.phase == "REQUEUED"  # Slurm's precedence
    assert JobState.from_json([]) == JobState("UNKNOWN") == JobState.from_json(None)
    assert JobState.from_json("PENDING") == JobState("PENDING")


def test_sacct_text_row_of_a_completing_job_gives_no_nodes():
    row = {"jobid": "5", "state": "COMPLETING", "nodelist": "n1", "nnodes": "2"}
    info = jobinfo.job_from_sacct(row, "sacct")
    assert info.nodelist is None and not info.ended and info.num_nodes == 2


def test_sacct_json_flags_are_kept():
    entry = {"job_id": 5, "state": {"current": ["FAILED", "COMPLETING"], "reason": "None"},
             "nodes": "n1", "allocation_nodes": 2}  # fmt: skip
    info = jobinfo.job_from_sacct_json(entry)
    assert info.state.completing and not info.ended and info.nodelist is None


def test_wait_for_waits_out_the_epilog(monkeypatch):
    """`wait_for(..., set())` returns the record once COMPLETING is gone: with the node list
    of the whole allocation, not of the node whose epilog ran last."""
    answers = [recorded("json_job_completing_24.11.json")] * 2 + [
        jobinfo.job_from_json({"job_id": 7, "job_state": ["COMPLETED"], "nodes": "n[0-1]"})
    ]
    monkeypatch.setattr(jobs, "job_info", lambda _id: answers.pop(0))
    monkeypatch.setattr(jobs.time, "sleep", lambda _s: None)
    info = jobs.wait_for(7, set(), timeout=60)
    assert info.ended and info.nodelist == "n[0-1]" and answers == []


def test_wait_for_matches_the_phase(monkeypatch):
    running = jobinfo.job_from_json({"job_id": 7, "job_state": ["RUNNING"], "nodes": "n4"})
    answers = [recorded("json_job_configuring_26.05.json"), running]
    monkeypatch.setattr(jobs, "job_info", lambda _id: answers.pop(0))
    monkeypatch.setattr(jobs.time, "sleep", lambda _s: None)
    assert jobs.wait_for(7, {"RUNNING"}, timeout=60).running and answers == []
