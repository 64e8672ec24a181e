"""Synthetic runs for the store and report tests."""

from __future__ import annotations

import uuid

from slurm_supernode.bench.model import BenchResult, BenchRun, Versions

SIZES = (1 << 10, 1 << 20, 64 << 20)


def make_run(
    t: float,
    *,
    scale: float = 1.0,
    wrong: int = 0,
    site: str = "lab",
    supernode: str = "sn0,sn1",
    nodes: int = 2,
    collectives=("all_reduce", "all_gather"),
    kind: str = "bench",
    params: str = "iters=20 warmup=5 check=1",
) -> BenchRun:
    """A run whose busbw is ``scale`` x a fixed curve; ``wrong`` goes on its first result."""
    results = []
    for coll in collectives:
        for size in SIZES:
            busbw = 100.0 * size / (size + (1 << 20)) * scale
            results.append(
                BenchResult(
                    scope="world", collective=coll, size=size, count=size // 2, dtype="bfloat16",
                    group_size=8, groups=1, time_us=size / busbw / 1e3, algbw=busbw / 1.75,
                    busbw=busbw, wrong=wrong if not results else 0,
                )
            )  # fmt: skip
    return BenchRun(
        run_id=uuid.uuid4().hex,
        time=t,
        site=site,
        supernode=supernode,
        nodes=nodes,
        world_size=8,
        backend="nccl",
        timing="events",
        job_id=str(int(t)),
        hosts=("n1", "n2"),
        versions=Versions(torch="2.11", comm="nccl 2.28.9", driver="580.159.04"),
        results=tuple(results),
        kind=kind,
        params=params,
    )
