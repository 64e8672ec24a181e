"""`snrun bench run` for real: 4 gloo processes on localhost, a fake 2-super-node split.

The processes get torchrun's variables by hand (RANK, WORLD_SIZE, LOCAL_RANK, GROUP_RANK,
LOCAL_WORLD_SIZE, MASTER_ADDR/PORT) plus SNRUN_SUPERNODE as the snrun agent sets it:
ranks 0-1 on node 0 of sn0, ranks 2-3 on node 1 of sn1.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(world: int, args: list[str], tmp_path: Path) -> list[subprocess.CompletedProcess]:
    port = _free_port()
    procs = []
    for rank in range(world):
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "RANK": str(rank),
            "WORLD_SIZE": str(world),
            "LOCAL_RANK": str(rank % 2),
            "LOCAL_WORLD_SIZE": "2",
            "GROUP_RANK": str(rank // 2),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "SNRUN_SUPERNODE": f"sn{rank // 2}",
            "SLURM_JOB_ID": "4242",
            "OMP_NUM_THREADS": "1",
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "slurm_supernode", "bench", "run", *args],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    results = []
    for p in procs:
        out, err = p.communicate(timeout=240)
        results.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return results


def test_four_ranks_every_collective_scope_and_dtype_correct(tmp_path):
    out_json, db = tmp_path / "run.json", tmp_path / "bench.sqlite"
    args = ["--sizes", "1K", "--dtype", "float32,bf16", "--iters", "2", "--warmup", "1",
            "--site", "lab", "--json", str(out_json), "--db", str(db)]  # fmt: skip
    procs = _spawn(4, args, tmp_path)
    for p in procs:
        assert p.returncode == 0, p.stderr[-2000:]
    table = procs[0].stdout
    assert "# Avg bus bandwidth" in table and "#wrong" in table
    assert all(p.stdout == "" for p in procs[1:])  # only rank 0 reports
    assert not list(tmp_path.glob(".run.json.*"))  # atomic write left no temp file

    run = json.loads(out_json.read_text())
    assert (run["site"], run["supernode"], run["nodes"], run["world_size"]) == (
        "lab", "sn0,sn1", 2, 4,
    )  # fmt: skip
    assert run["job_id"] == "4242" and run["backend"] == "gloo" and run["good"]
    got = {(r["scope"], r["collective"], r["dtype"], r["size"]) for r in run["results"]}
    for scope in ("node", "supernode", "inter", "world"):
        for coll in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast"):
            for dtype in ("float32", "bfloat16"):
                assert (scope, coll, dtype, 1024) in got
    shapes = {(r["scope"], r["group_size"], r["groups"]) for r in run["results"]}
    assert shapes == {("node", 2, 2), ("supernode", 2, 2), ("inter", 2, 2), ("world", 4, 1)}
    assert all(r["wrong"] == 0 for r in run["results"])
    assert all(r["busbw"] > 0 and r["time_us"] > 0 for r in run["results"])

    from slurm_supernode.bench.store import open_store

    with open_store(db) as store:
        stored = store.get_run(run["run_id"])
    assert len(stored.results) == len(run["results"]) == 4 * 5 * 2
