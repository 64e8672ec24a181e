"""A running job watched with no change to its code, on the real cluster: node samples, step
records, a profiler window, and a slow node named while it runs, then left behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm_supernode.observe.records import (
    CommShare,
    NodeSample,
    SlowNodeMark,
    StepRecord,
    read,
)
from slurm_supernode.observe.trace_reduce import intersect, length, union
from tests.integration.helpers import EXAMPLES, attempts, ledger, snrun, submit, wait_final

pytestmark = pytest.mark.slurm
SLOW = "n1"


def site_with_spares(tmp_path: Path) -> Path:
    """local.yaml with one spare per super node (jobs take 3 of 4 nodes) and a judge of 2
    windows in a row."""
    text = (Path(__file__).resolve().parents[2] / "site-configs" / "local.yaml").read_text()
    for nodes in ("n[0-3]", "n[4-7]"):
        text = text.replace(f"    nodes: {nodes}\n", f"    nodes: {nodes}\n    spares: 1\n")
    site = tmp_path / "site.yaml"
    site.write_text(text + "\nobserve:\n  slow_windows: 2\n")
    return site


def gloo_share(trace: dict) -> float:
    """The communication seconds of a trace, counted here on its own: the union of its gloo
    spans inside the profiler's window."""
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    window = next((e["ts"], e["ts"] + e["dur"]) for e in events if e["name"].startswith("PyTorch"))
    spans = union((e["ts"], e["ts"] + e["dur"]) for e in events if e["name"].startswith("gloo:"))
    return length(intersect(spans, [window])) / 1e6


def test_slow_node_named_while_running_then_requeued_without_it(
    slurm_cluster, tmp_path: Path
) -> None:
    """Two super nodes of 3 nodes, one rank each; the ranks on n1 work 80 ms more per step.
    n1 is named within 60 s of the first steps, with evidence, while the job runs; the attempt
    ends with cause slow and the next one runs on the spare, to completion. The same job shows
    the node samples (per node, per attempt, NVML said missing: no GPUs here), the step records
    and a profiler window whose record agrees with its own trace."""
    _, job_dir = submit(
        "--site", str(site_with_spares(tmp_path)), "-S", "2", "--nproc-per-node", "1",
        "--env-profile", "gloo", "--on-slow-node", "requeue",
        "--env", "SNRUN_SAMPLE_PERIOD=1", "--env", f"SNRUN_EXAMPLE_SLOW_HOST={SLOW}",
        "--env", "SNRUN_PROFILE_AFTER=4", "--env", "SNRUN_PROFILE_STEPS=3",
        str(EXAMPLES / "train_observed.py"), "--seconds", "25",
        jobs=tmp_path / "jobs",
    )  # fmt: skip
    final = wait_final(job_dir, 420)
    starts = [r for r in ledger(job_dir) if r["event"] == "attempt_start"]
    from ClusterShell.NodeSet import NodeSet

    first, last = set(NodeSet(starts[0]["nodes"])), set(NodeSet(starts[-1]["nodes"]))
    assert SLOW in first, f"{SLOW} not in the first attempt's nodes {first}"
    assert final["state"] == "COMPLETED", final
    ends = attempts(job_dir)
    assert (ends[0]["cause"], ends[0]["action"], ends[0]["exclude"]) == ("slow", "requeue", [SLOW])
    assert SLOW not in last and len(last) == 6 and ends[-1]["cause"] == "success"

    obs = job_dir / "observe"
    marks = [m for m in read(obs / "0" / "slow.jsonl") if isinstance(m, SlowNodeMark)]
    assert [m.node for m in marks] == [SLOW] and marks[0].supernode == "sn0"
    assert marks[0].ratio > 1.2 and "per step against" in marks[0].evidence
    steps0 = [r for p in (obs / "0").glob("rank-*.steps.jsonl") for r in read(p)]
    assert all(isinstance(r, StepRecord) for r in steps0) and len({r.rank for r in steps0}) == 6
    assert marks[0].t - min(r.t for r in steps0) < 60, "named later than a minute"
    assert marks[0].t < ends[0]["time"]  # named while the attempt ran
    assert not (obs / "1" / "slow.jsonl").exists()
    assert any(r.loss is not None for r in steps0)  # progress.report's loss

    for attempt, nodes in (("0", first), ("1", last)):
        for node in nodes:
            samples = list(read(obs / attempt / f"{node}.samples.jsonl"))
            assert samples and all(isinstance(s, NodeSample) for s in samples), (attempt, node)
            assert samples[-1].mem_total_bytes and samples[-1].disk_total_bytes
            assert "NVML" in samples[-1].missing["devices"]  # no GPU here: said, job goes on

    shares = [r for p in (obs / "1").glob("rank-*.comm.jsonl") for r in read(p)]
    assert len({r.rank for r in shares}) == 6 and all(isinstance(r, CommShare) for r in shares)
    for share in shares:
        assert share.steps == 3 and share.compute_s > 0
        trace = json.loads((job_dir / share.trace).read_text())
        comm = share.exposed_comm_s + share.overlapped_comm_s
        assert comm == pytest.approx(gloo_share(trace), rel=0.01, abs=1e-6)

    status = snrun("status", str(job_dir), jobs=tmp_path / "jobs").stdout
    assert f"slow node {SLOW} (sn0): busy" in status


def test_spawned_workers_record_their_optimizer_steps(slurm_cluster, tmp_path: Path) -> None:
    """--no-fork-workers (as -m modules and Ascend sites run): each rank is a fresh interpreter
    started through runtime/spawn_entry.py, and torch's optimizer-step hook still records one
    record per step (the script's progress.report only adds its loss) and opens the profiler
    window, with no change to the script."""
    _, job_dir = submit(
        "-N", "2", "--allow-partial", "--nproc-per-node", "1", "--no-fork-workers",
        "--env-profile", "gloo", "--env", "SNRUN_PROFILE_AFTER=3", "--env", "SNRUN_PROFILE_STEPS=2",
        str(EXAMPLES / "train_observed.py"), "--seconds", "6",
        jobs=tmp_path / "jobs",
    )  # fmt: skip
    final = wait_final(job_dir, 300)
    assert final["state"] == "COMPLETED", final
    plan = json.loads((job_dir / "plan.json").read_text())
    assert plan["fork_workers"] is False
    obs = job_dir / "observe" / "0"
    for rank in (0, 1):
        steps = [r for r in read(obs / f"rank-{rank}.steps.jsonl") if isinstance(r, StepRecord)]
        assert len(steps) >= 5 and [s.step for s in steps] == list(range(1, len(steps) + 1))
        assert all(s.loss is not None and s.busy_s is not None for s in steps[1:])
        (window,) = [c for c in read(obs / f"rank-{rank}.comm.jsonl") if isinstance(c, CommShare)]
        assert window.steps == 2 and window.compute_s > 0
