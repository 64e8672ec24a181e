"""Per-rank exit codes from torchrun's failure report, and the stderr tee that keeps it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from slurm_supernode.chain import ledger
from slurm_supernode.chain.status import chain_summary, format_chain
from slurm_supernode.forensics.torchrun_report import describe, parse_failures
from slurm_supernode.runtime.stderr_tail import StderrTail

DATA = Path(__file__).resolve().parents[1] / "data"


def test_parses_root_cause_and_other_failures_of_torch_2_13() -> None:
    """Real output of torchrun 2.13: rank 1 exited 3, torchrun then SIGTERMed rank 0."""
    ranks = parse_failures((DATA / "torchrun-failure-2.13.txt").read_text())
    assert ranks == [
        {"rank": 0, "local_rank": 0, "exit_code": -15, "first": False, "signal": "SIGTERM"},
        {"rank": 1, "local_rank": 1, "exit_code": 3, "first": True},
    ]
    assert describe(ranks) == "rank 1=3 first, rank 0=SIGTERM"


def test_parses_torch_2_11_report_with_traceback_and_no_other_failures() -> None:
    """Real output of torchrun 2.11 on H200 (--fork-workers before the NVML fix)."""
    ranks = parse_failures((DATA / "torchrun-failure-2.11.txt").read_text())
    assert ranks == [{"rank": 0, "local_rank": 0, "exit_code": 1, "first": True}]


def test_no_report_no_ranks_and_only_the_last_report_counts() -> None:
    assert parse_failures("rank      : 3 (local_rank: 1)\n  exitcode  : 1 (pid: 9)\n") == []
    old = (DATA / "torchrun-failure-2.13.txt").read_text()
    new = (DATA / "torchrun-failure-2.11.txt").read_text()
    assert [r["rank"] for r in parse_failures(old + "\n" + new)] == [0]
    many = [{"rank": i, "exit_code": 1} for i in range(6)]
    assert describe(many, limit=2) == "rank 0=1, rank 1=1, +4 more"


def test_stderr_tail_passes_everything_through_and_keeps_the_end(tmp_path: Path) -> None:
    """The child's stderr reaches ours unchanged, even past the kept size, and the tail holds
    the end of it."""
    code = (
        "import sys\n"
        "for i in range(4000): sys.stderr.write(f'line {i:05d} ' + 'x' * 90 + '\\n')\n"
        "sys.stderr.write('THE END\\n')\n"
    )
    sink = tmp_path / "sink"
    with open(sink, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE)
        assert proc.stderr is not None
        tail = StderrTail(proc.stderr.fileno(), keep=4096, out_fd=out.fileno())
        assert proc.wait() == 0
        kept = tail.text()
    copied = sink.read_text()
    assert copied.count("\n") == 4001 and copied.endswith("THE END\n")
    assert len(kept) == 4096 and kept.endswith("line 03999 " + "x" * 90 + "\nTHE END\n")


def test_failed_ranks_reach_the_fold_and_the_status_table(tmp_path: Path) -> None:
    ranks = parse_failures((DATA / "torchrun-failure-2.13.txt").read_text())
    ledger.append(tmp_path, "attempt_start", attempt=0, job_id=7, nodes="n[0-1]")
    ledger.append(tmp_path, "node_exit", attempt=0, job_id=7, node="n0", exit_code=1, ranks=ranks)
    ledger.append(tmp_path, "node_exit", attempt=0, job_id=7, node="n1", exit_code=1)
    ledger.append(
        tmp_path, "attempt_end", attempt=0, job_id=7, exit_code=1, cause="app_error",
        action="stop", detail="ranks exited non-zero (n0=1,n1=1)",
    )  # fmt: skip
    attempt = ledger.fold(ledger.read(tmp_path)).attempts[0]
    assert [(r["node"], r["rank"], r["exit_code"]) for r in attempt.ranks] == [
        ("n0", 0, -15),
        ("n0", 1, 3),
    ]
    table = format_chain(chain_summary(tmp_path))
    assert "(n0=1,n1=1) [rank 1=3 first, rank 0=SIGTERM]" in table


def test_only_the_chains_earliest_failing_rank_is_first(tmp_path: Path) -> None:
    """Every node's torchrun marks its own root cause first; the status marks only the rank
    the cause line names (the earliest error file over all nodes)."""
    import json

    ledger.append(tmp_path, "attempt_start", attempt=0, job_id=7, nodes="n[0-1]")
    for node, rank, local in (("n0", 1, 1), ("n1", 2, 0)):
        own = {"rank": rank, "local_rank": local, "exit_code": 1, "first": True}
        other = {"rank": rank ^ 1, "local_rank": local ^ 1, "exit_code": 1, "first": False}
        ledger.append(tmp_path, "node_exit", attempt=0, job_id=7, node=node, exit_code=1,
                      ranks=[own, other])  # fmt: skip
    ledger.append(tmp_path, "attempt_end", attempt=0, job_id=7, exit_code=1, cause="app_error",
                  action="stop", detail="ranks exited non-zero (n0=1,n1=1)")  # fmt: skip
    both = format_chain(chain_summary(tmp_path))
    assert "first" not in both  # two nodes' marks, no error file to order them
    # rank 2's error file (n1, local rank 0) is the earliest: it alone is first
    for node, local, stamp in (("n0", 1, 200), ("n1", 0, 100)):
        d = tmp_path / "logs" / "attempt0" / node / "none_x" / "attempt_0" / str(local)
        d.mkdir(parents=True)
        (d / "stderr.log").write_text("")
        msg = {"message": "ValueError: bad", "extraInfo": {"py_callstack": "", "timestamp": stamp}}
        (d / "error.json").write_text(json.dumps({"message": msg}))
        (tmp_path / "env").mkdir(exist_ok=True)
        node_rank = 0 if node == "n0" else 1
        (tmp_path / "env" / f"{node}.0.json").write_text(
            json.dumps({"argv": ["python", "--nproc-per-node=2"], "node_rank": node_rank})
        )
    summary = chain_summary(tmp_path)
    assert summary["attempts"][0]["error"]["rank"] == 2
    table = format_chain(summary)
    assert table.count(" first") == 1 and "rank 2=1 first" in table, table
    assert [r["rank"] for r in summary["attempts"][0]["ranks"] if r["first"]] == [2]
