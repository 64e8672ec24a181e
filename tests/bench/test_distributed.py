"""`snrun bench run` for real: 4 gloo processes on localhost, a fake 2-super-node split.

The forked processes get torchrun's variables by hand (RANK, WORLD_SIZE, LOCAL_RANK, GROUP_RANK,
LOCAL_WORLD_SIZE, MASTER_ADDR/PORT) plus SNRUN_SUPERNODE as the snrun agent sets it:
ranks 0-1 on node 0 of sn0, ranks 2-3 on node 1 of sn1.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import socket
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")  # imported here so that the forked ranks inherit it
pytestmark = pytest.mark.torch


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(rank: int, world: int, port: int, args: list[str], log: str) -> None:
    """One rank: torchrun's variables, then the CLI as `python -m slurm_supernode` runs it."""
    os.environ.update(
        RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_RANK=str(rank % 2),
        LOCAL_WORLD_SIZE="2",
        GROUP_RANK=str(rank // 2),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        SNRUN_SUPERNODE=f"sn{rank // 2}",
        SLURM_JOB_ID="4242",
    )
    with open(log, "w") as out:
        os.dup2(out.fileno(), 1)
        sys.stdout = out
        from slurm_supernode.cli.main import main

        code = main(["bench", "run", *args])
        out.flush()
    os._exit(code)


def _spawn(world: int, args: list[str], tmp_path: Path) -> list[tuple[int, str]]:
    """Fork (torch is imported once, in pytest: a spawn per rank costs ~15 s on 2 cores)."""
    ctx = multiprocessing.get_context("fork")
    port = _free_port()
    logs = [str(tmp_path / f"rank{r}.out") for r in range(world)]
    procs = [ctx.Process(target=_rank_main, args=(r, world, port, args, logs[r]))
             for r in range(world)]  # fmt: skip
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=240)
    return [(p.exitcode, Path(log).read_text()) for p, log in zip(procs, logs, strict=True)]


def test_four_ranks_every_collective_scope_and_dtype_correct(tmp_path):
    out_json, db = tmp_path / "run.json", tmp_path / "bench.sqlite"
    args = ["--sizes", "1K", "--dtype", "float32,bf16", "--iters", "2", "--warmup", "1",
            "--site", "lab", "--json", str(out_json), "--db", str(db)]  # fmt: skip
    procs = _spawn(4, args, tmp_path)
    assert [code for code, _ in procs] == [0, 0, 0, 0]
    table = procs[0][1]
    assert "# Avg bus bandwidth" in table and "#wrong" in table
    assert all(out == "" for _, out in procs[1:])  # only rank 0 reports
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
    # who measured and with which settings go with the run (a baseline takes only its own)
    assert (run["kind"], run["params"]) == ("bench", "iters=2 warmup=1 check=1")
    assert (stored.kind, stored.params) == ("bench", "iters=2 warmup=1 check=1")


def _repeats_main(rank: int, world: int, port: int, args: list[str], log: str) -> None:
    """One rank measuring as the doctor does: the largest size three times."""
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank % 2),
                      LOCAL_WORLD_SIZE="2", GROUP_RANK=str(rank // 2), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port), SNRUN_SUPERNODE=f"sn{rank // 2}")  # fmt: skip
    from slurm_supernode.bench.collectives import run_benchmark
    from slurm_supernode.bench.model import BenchConfig

    config = BenchConfig(sizes=(1024, 4096), collectives=("all_reduce",), scopes=("node",),
                         iters=2, warmup=1, backend="gloo", kind="doctor", repeats=3)  # fmt: skip
    run = run_benchmark(config, dict(os.environ))
    with open(log, "w") as out:
        out.write(json.dumps(run.to_dict()) if run else "")
    os._exit(0)


def test_repeats_keep_every_groups_figures_at_the_largest_size(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "_rank_main", _repeats_main)
    procs = _spawn(4, [], tmp_path)
    assert [code for code, _ in procs] == [0, 0, 0, 0]
    run = json.loads(procs[0][1])
    assert run["kind"] == "doctor" and run["params"] == "iters=2 warmup=1 check=1"
    by_size = {}
    for g in run["group_results"]:
        by_size.setdefault(g["size"], []).append(g)
    assert [len(g["samples"]) for g in by_size[4096]] == [3, 3]  # the judged size: 3 repeats
    assert [g["samples"] for g in by_size[1024]] == [[], []]  # smaller sizes: once
    for g in by_size[4096]:
        assert all(s > 0 for s in g["samples"])
        assert min(g["samples"]) <= g["busbw"] * 1.0001  # the mean time lies between them
        assert max(g["samples"]) >= g["busbw"] * 0.9999
