"""Planner scale bench: build and check the rank map of a 100,000-GPU NVL72-like site.

Prints wall time and peak Python memory (tracemalloc) of ``build_rank_map`` (tp=8, pp=8) on
~10k and ~100k GPUs side by side, plus the JSON export and the cost estimate, so linear growth
is visible. Targets here: < 2 s and < 1 GB at 100k. Run: ``python3 bench/bench_plan.py``.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from slurm_supernode.hostlist import fold  # noqa: E402
from slurm_supernode.placement.cost import Workload, plan_cost  # noqa: E402
from slurm_supernode.placement.model import Layout  # noqa: E402
from slurm_supernode.placement.models import model_spec  # noqa: E402
from slurm_supernode.placement.rankmap import build_rank_map, rank_map_to_json  # noqa: E402
from tests.placement.sites import nvl72_site  # noqa: E402


def measure(fn):
    gc.collect()
    tracemalloc.start()
    t0 = time.perf_counter()
    result = fn()
    elapsed = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, elapsed, peak / 2**20


def timed(fn):
    gc.collect()
    t0 = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t0


def run(supernodes: int) -> dict[str, float]:
    site = nvl72_site(supernodes)
    hosts = [n.hostname for n in site.nodes][::-1]  # reversed: the sort has real work to do
    layout = Layout(tp=8, pp=8)
    rm, t_build = timed(lambda: build_rank_map(site, hosts, layout))
    _, _, mem_build = measure(lambda: build_rank_map(site, hosts, layout))
    folded = fold(hosts)  # what SLURM_JOB_NODELIST looks like
    _, t_str = timed(lambda: build_rank_map(site, folded, layout))
    _, t_json = timed(lambda: rank_map_to_json(rm))
    work = Workload(model_spec("llama-405b"), tflops=2500)
    _, t_cost = timed(lambda: plan_cost(site, rm, work))
    return {
        "gpus": rm.world_size,
        "nodes": len(rm.nodes),
        "build_s": t_build,
        "build_peak_mb": mem_build,
        "build_from_hostlist_s": t_str,
        "json_s": t_json,
        "cost_s": t_cost,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--small", type=int, default=144, help="super nodes of the small site")
    p.add_argument("--large", type=int, default=1400, help="super nodes of the large site")
    args = p.parse_args()
    small, large = run(args.small), run(args.large)
    print(f"{'figure':<24}{'small':>12}{'large':>12}{'ratio':>8}")
    for key in small:
        a, b = small[key], large[key]
        ratio = b / a if a else float("nan")
        fmt = "{:>12.0f}" if key in ("gpus", "nodes") else "{:>12.3f}"
        print(f"{key:<24}" + fmt.format(a) + fmt.format(b) + f"{ratio:>8.1f}")
    ok = large["build_s"] < 2.0 and large["build_peak_mb"] < 1024
    print(f"target at {large['gpus']} GPUs: build < 2 s and < 1 GB: {'met' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
