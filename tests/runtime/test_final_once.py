"""Ended is ended: a chain's final record is written once, by whichever writer comes first
(supervisor, lost-supervisor path, cancel, sweep cancel); every later writer leaves it."""

from __future__ import annotations

import ast
from pathlib import Path

from slurm_supernode.chain import ledger
from slurm_supernode.chain.lost import record_lost_supervisor
from slurm_supernode.runtime.classify import ExitCode
from tests.runtime.test_supervisor_loop import OK, Harness

PACKAGE = Path(__file__).resolve().parents[2] / "slurm_supernode"


def test_append_final_writes_once(tmp_path):
    first = ledger.append_final(tmp_path, job_id=1, state="COMPLETED", reason="done")
    assert first is not None and first["state"] == "COMPLETED"
    assert ledger.append_final(tmp_path, job_id=1, state="CANCELLED", reason="x") is None
    assert ledger.append_final(tmp_path, job_id=1, state="FAILED", reason="y") is None
    finals = [r for r in ledger.read(tmp_path) if r["event"] == "final"]
    assert [f["state"] for f in finals] == ["COMPLETED"]


def test_a_ledger_with_two_final_records_keeps_the_first(tmp_path):
    """Ledgers written before the rule: the first end is the chain's end."""
    ledger.append(tmp_path, "final", job_id=1, state="COMPLETED", reason="done")
    ledger.append(tmp_path, "final", state="CANCELLED", reason="snrun cancel")
    assert ledger.fold(ledger.read(tmp_path)).final["state"] == "COMPLETED"


def test_lost_supervisor_path_leaves_an_end(tmp_path, monkeypatch):
    ledger.append(tmp_path, "attempt_start", attempt=0, job_id=7, nodes="n0")
    ledger.append_final(tmp_path, job_id=7, state="CANCELLED", reason="snrun cancel")
    assert record_lost_supervisor(tmp_path, 137, 7, expedite=False) is None
    assert ledger.fold(ledger.read(tmp_path)).final["state"] == "CANCELLED"


def test_supervisor_that_completes_after_a_cancel_leaves_the_cancel(tmp_path, monkeypatch):
    """The cancel's final record lands while the step runs; the step then ends 0."""
    h = Harness(tmp_path, monkeypatch)
    assert h.run({"attempts": [{**OK, "cancel_record": True}]}) is ExitCode.OK
    finals = [r for r in ledger.read(h.job_dir) if r["event"] == "final"]
    assert [(f["state"], f["reason"]) for f in finals] == [("CANCELLED", "snrun cancel")]


def test_supervisor_of_an_ended_chain_runs_nothing(tmp_path, monkeypatch):
    """A job of a chain that ended (requeued by hand, a stray resubmission) starts nothing."""
    h = Harness(tmp_path, monkeypatch)
    ledger.append_final(h.job_dir, job_id=1, state="COMPLETED", reason="all nodes exited 0")
    assert h.run({"attempts": [OK]}) is ExitCode.OK
    assert h.commands("srun") == [] and h.ends() == []
    assert [r["event"] for r in ledger.read(h.job_dir)] == ["final"]


def _final_appends(tree: ast.AST) -> list[int]:
    """Lines that append an event named "final" by hand (not through append_final)."""
    lines = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and len(node.args) >= 2):
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        event = node.args[1]
        if name == "append" and isinstance(event, ast.Constant) and event.value == "final":
            lines.append(node.lineno)
    return lines


def test_every_writer_of_a_final_record_goes_through_append_final():
    """The audit as a test: no module of the package writes a final record by hand."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        lines = _final_appends(ast.parse(path.read_text(), str(path)))
        if lines:
            found[str(path.relative_to(PACKAGE))] = lines
    assert found == {}


def test_the_audit_finds_a_hand_written_final_record():
    tree = ast.parse('ledger.append(d, "final", state="CANCELLED")\nledger.append(d, "x")\n')
    assert _final_appends(tree) == [1]
