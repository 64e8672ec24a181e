"""perf/bench_sched.py's records -> rows -> summary path on what scontrol shows for jobs that
were cancelled (before they started: NodeList=(null), StartTime = EndTime = the cancel; while
running: EndTime = the cancel) or purged. It crashed on the first (HostlistError on '(null)')."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "perf"
sys.path.insert(0, str(BENCH))
bench_sched = pytest.importorskip("bench_sched")

SNS = {f"sn{s}": [f"n{s * 18 + i}" for i in range(18)] for s in range(8)}


def line(job_id, state, submit, start, end, nodelist, name="sched-1"):
    """One `scontrol -o show job` line, the fields bench_sched reads (22.05's spelling)."""
    return (
        f"JobId={job_id} JobName={name} UserId=root(0) JobState={state} Reason=None"
        f" SubmitTime=2026-12-01T13:40:{submit:02d} StartTime={start} EndTime={end}"
        f" Partition=main NodeList={nodelist} NumNodes=16"
    )


def recs(*lines):
    return [dict(bench_sched.TIME_RE.findall(x)) for x in lines]


def base(index=1, gpus=64, nodes=16):
    return {"index": index, "gpus": gpus, "nodes_asked": nodes, "duration_s": 30, "offset_s": 0}


def test_job_cancelled_while_pending_has_no_nodes_and_no_start():
    r = recs(line(7, "CANCELLED", 1, "2026-12-01T13:40:09", "2026-12-01T13:40:09", "(null)"))
    row = bench_sched.job_row(base(), {"job_id": 7, "how": "sbatch"}, r, SNS)
    assert row["started"] is False and row["state"] == "CANCELLED"
    assert "start" not in row and row["nodes_alloc"] == 0 and row["end"] - row["submit"] == 8


def test_job_cancelled_while_running_counts_the_time_it_ran():
    r = recs(line(8, "CANCELLED", 0, "2026-12-01T13:40:02", "2026-12-01T13:40:12", "n[18-33]"))
    row = bench_sched.job_row(base(), {"job_id": 8, "how": "sbatch"}, r, SNS)
    assert row["started"] and row["supernodes"] == ["sn1"] and row["nodes_alloc"] == 16
    assert row["end"] - row["start"] == 10


def test_pending_start_unknown_and_purged_records_do_not_crash():
    r = recs(line(9, "CANCELLED", 0, "Unknown", "2026-12-01T13:40:05", "(null)"))
    assert bench_sched.job_row(base(), {"job_id": 9, "how": "sbatch"}, r, SNS)["started"] is False
    gone = bench_sched.job_row(base(), {"job_id": 10, "how": "sbatch"}, [], SNS)
    assert "purged" in gone["error"]
    het = recs(
        line(11, "CANCELLED", 0, "2026-12-01T13:40:01", "2026-12-01T13:40:01", "(null)"),
        line(12, "CANCELLED", 0, "2026-12-01T13:40:01", "2026-12-01T13:40:01", "(null)"),
    )
    assert bench_sched.job_row(base(), {"job_id": 11, "how": "snrun"}, het, SNS)["nodes_alloc"] == 0


def test_summary_of_a_replay_with_cancelled_jobs():
    sub = {"job_id": 1, "how": "sbatch"}
    ran = bench_sched.job_row(
        base(1, 64, 16), sub,
        recs(line(1, "COMPLETED", 0, "2026-12-01T13:40:00", "2026-12-01T13:40:30", "n[0-15]")),
        SNS,
    ) | {"aligned": True}  # fmt: skip
    cut = bench_sched.job_row(
        base(2, 4, 1), sub,
        recs(line(2, "CANCELLED", 0, "2026-12-01T13:40:10", "2026-12-01T13:40:40", "n16")),
        SNS,
    )  # fmt: skip
    never = bench_sched.job_row(
        base(3, 64, 16), sub,
        recs(line(3, "CANCELLED", 20, "2026-12-01T13:40:40", "2026-12-01T13:40:40", "(null)")),
        SNS,
    )  # fmt: skip
    unsent = base(4) | {"error": "not submitted: --budget ran out"}
    s = bench_sched.summarize("lua", [ran, cut, never, unsent], [{"fragmented": 1}])
    assert (s["jobs"], s["started"], s["cancelled"], s["cancelled_before_start"]) == (4, 2, 2, 1)
    assert (s["failed_submit"], s["makespan_s"], s["wait_before_cancel_mean_s"]) == (1, 40, 20)
    # asked GPU-seconds: 64 x 30 + 4 x 30 over 576 GPUs x 40 s; waits only of started jobs
    assert s["util_asked_pct"] == round(100 * (64 * 30 + 4 * 30) / (576 * 40), 1)
    assert (s["wait_mean_s"], s["multi_node_jobs"], s["aligned_pct"]) == (5, 1, 100)


def test_summary_when_nothing_started():
    row = bench_sched.job_row(
        base(), {"job_id": 5, "how": "sbatch"},
        recs(line(5, "CANCELLED", 0, "2026-12-01T13:40:03", "2026-12-01T13:40:03", "(null)")),
        SNS,
    )  # fmt: skip
    s = bench_sched.summarize("lua", [row], [])
    assert (s["started"], s["util_asked_pct"], s["cancelled_before_start"]) == (0, None, 1)
