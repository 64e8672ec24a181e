"""A real gloo job with `--tp 2 --ep 4` forms Megatron's groups where `snrun plan` says (issue 13).

The training script (contrib/examples/megatron_groups.py) builds its groups from rank numbers and
the Megatron flags alone, with torch.distributed.new_group, all-reduces in each and compares
members and hosts with the job's plan; here the report is checked against `snrun plan --json`
for the same allocation, and against the expected Megatron groups written out by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.helpers import EXAMPLES, snrun, submit, wait_final

pytestmark = pytest.mark.slurm


def _plan_groups(plan: dict, dim: str) -> list[list[tuple[int, str]]]:
    """A dimension's groups from the plan JSON (size/stride) with each member's host."""
    g, host = plan["groups"][dim], {r["rank"]: r["hostname"] for r in plan["ranks"]}
    size, stride = g["size"], g["stride"]
    return [
        [(b + k * stride, host[b + k * stride]) for k in range(size)]
        for b in range(plan["world_size"])
        if (b // stride) % size == 0
    ]


def test_megatron_groups_of_a_tp2_ep4_job_match_the_plan(slurm_cluster, tmp_path: Path) -> None:
    layout = ["--tp", "2", "--ep", "4"]
    megatron = ["--tensor-model-parallel-size", "2", "--expert-model-parallel-size", "4"]
    _, job_dir = submit(
        "-S", "2", "--nproc-per-node", "2", *layout, "--fork-workers", "-t", "5",
        str(EXAMPLES / "megatron_groups.py"), *megatron,
        jobs=tmp_path / "jobs", timeout=300,
    )  # fmt: skip
    final = wait_final(job_dir, timeout=420)
    report_path = job_dir / "groups.json"
    assert final["state"] == "COMPLETED", (final, report_path.exists())
    report = json.loads(report_path.read_text())
    assert report["ok"], report["problems"]
    assert report["world_size"] == 16
    lay = report["layout"]
    assert (lay["tp"], lay["ep"], lay["etp"], lay["dp"], lay["edp"]) == (2, 4, 2, 8, 2)

    plan = json.loads(
        snrun("plan", "--nodelist", "n[0-7]", "--nproc-per-node", "2", *layout, "--json",
              jobs=tmp_path / "jobs").stdout
    )  # fmt: skip
    for dim in ("tp", "dp", "ep", "etp", "edp"):
        got = [[tuple(m) for m in g] for g in report["groups"][dim]]
        assert got == _plan_groups(plan, dim), dim
    # Megatron's EP groups are etp=2 ranks apart: four nodes of one super node each
    ep = [[r for r, _ in g] for g in report["groups"]["ep"]]
    assert ep == [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]]
    assert {h for _, h in report["groups"]["ep"][0]} == {"n0", "n1", "n2", "n3"}
    assert {h for _, h in report["groups"]["ep"][2]} == {"n4", "n5", "n6", "n7"}
    # expert data parallelism pairs the super nodes; TP stays on a node
    assert [[r for r, _ in g] for g in report["groups"]["edp"]][:2] == [[0, 8], [1, 9]]
    assert all(len({h for _, h in g}) == 1 for g in report["groups"]["tp"])
