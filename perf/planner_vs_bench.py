"""The planner's all-reduce time against ``snrun bench run`` measurements (issue 14).

Two steps, kept apart so the check is not circular:
  fit RUN.json            describe the link from one measured run: the bandwidth_GBps and
                          latency_us that minimise the largest relative error of the planner's
                          ring model over all_reduce sizes >= --min-bytes (what an admin puts in
                          the site's links from a bench run)
  compare --site S RUN... the planner's predicted time (``snrun plan``'s TP pricing of one
                          all-reduce of b x s x h bf16 on the site's node link) against other
                          measured runs, size by size, with the relative difference
Run: ``python3 perf/planner_vs_bench.py compare --site perf/results/planner-h200x2/site.yaml
perf/results/planner-h200x2/allreduce_bf16_run*.json``. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from slurm_supernode.bench.measure_options import parse_size  # noqa: E402
from slurm_supernode.placement.cost import (  # noqa: E402
    Workload,
    collective_time,
    levels_of,
    step_cost,
)
from slurm_supernode.placement.llm_presets import model_spec  # noqa: E402
from slurm_supernode.placement.model import Layout  # noqa: E402
from slurm_supernode.placement.rankmap import build_rank_map  # noqa: E402
from slurm_supernode.site.loader import load_site  # noqa: E402
from slurm_supernode.site.model import LinkLevel  # noqa: E402

# b x s x h (bf16) shapes behind each measured size: one TP all-reduce of a layer's output
SHAPES = {
    16 << 20: (1, 2048, 4096),  # 7B-class, 2k context
    32 << 20: (1, 4096, 4096),  # Mixtral 8x7B, 4k
    48 << 20: (1, 2048, 12288),  # GPT-3 175B, 2k
    64 << 20: (1, 4096, 8192),  # Llama 70B, 4k
    96 << 20: (1, 4096, 12288),  # GPT-3 175B, 4k
    128 << 20: (1, 8192, 8192),  # Llama 70B, 8k
    256 << 20: (1, 8192, 16384),  # Llama 405B, 8k
    512 << 20: (2, 8192, 16384),
    768 << 20: (4, 8192, 12288),
    1 << 30: (4, 8192, 16384),
    2 << 30: (8, 8192, 16384),
    4 << 30: (16, 8192, 16384),
}


def all_reduce_times(paths: list[str], min_bytes: int) -> dict[int, list[float]]:
    """size -> measured all_reduce times (us) of 2-rank bf16 runs, one per file."""
    out: dict[int, list[float]] = {}
    for path in paths:
        run = json.loads(Path(path).read_text())
        for r in run["results"]:
            wanted = r["collective"] == "all_reduce" and r["dtype"] == "bfloat16"
            if wanted and r["size"] >= min_bytes and r["group_size"] == 2 and r["wrong"] == 0:
                out.setdefault(r["size"], []).append(r["time_us"])
    return out


def planner_time_us(site, host: str, b: int, s: int, h: int) -> float:
    """One all-reduce of b x s x h bf16 as ``snrun plan`` prices TP (4 per layer, M = 1)."""
    model = model_spec(hidden=h, layers=1, seq=s, params=1e6, micro_batch=b)
    rm = build_rank_map(site, [host], Layout(tp=2), 2)
    work = Workload(model, global_batch=b, compute_time_s=1.0)
    tp = next(d for d in step_cost(site, rm.layout, levels_of(rm, site=site), work).dims)
    one = collective_time(site.links[tp.level], "all_reduce", b * s * h * 2, 2)
    assert abs(tp.time_s / 4 - one) <= 1e-12 * one, (tp.time_s, one)  # the same arithmetic
    return 1e6 * one


def fit(args) -> int:
    times = {k: statistics.mean(v) for k, v in all_reduce_times(args.runs, args.min_bytes).items()}
    best = None
    for bw10 in range(1000, 6001):  # 100.0 .. 600.0 GB/s
        bw = bw10 / 10
        for lat10 in range(0, 501):  # 0.0 .. 50.0 us per ring step
            link = LinkLevel("node", bw, lat10 / 10)
            err = max(
                abs(1e6 * collective_time(link, "all_reduce", s, 2) / t - 1)
                for s, t in times.items()
            )
            if best is None or err < best[0]:
                best = (err, bw, lat10 / 10)
    err, bw, lat = best
    print(f"fit on {len(times)} sizes >= {args.min_bytes} B of {', '.join(args.runs)}")
    print(f"  node: {{bandwidth_GBps: {bw:g}, latency_us: {lat:g}}}  (largest error {err:.1%})")
    return 0


def compare(args) -> int:
    site = load_site(args.site)
    host = site.nodes[0].hostname
    times = all_reduce_times(args.runs, args.min_bytes)
    link = site.links["node"]
    print(
        f"site {site.name}: node link {link.bandwidth_GBps:g} GB/s, {link.latency_us:g} us/step;"
        f" {len(args.runs)} run(s)"
    )
    header = "| size | b x s x h | measured (us) | planner (us) | planner / measured |"
    print(header)
    print("|---|---|---|---|---|")
    worst = 0.0
    for size in sorted(times):
        b, s, h = SHAPES.get(size, (1, size // (2 * 8192), 8192))
        if b * s * h * 2 != size:
            continue
        meas = statistics.mean(times[size])
        pred = planner_time_us(site, host, b, s, h)
        dev = pred / meas - 1
        worst = max(worst, abs(dev))
        spread = f" ({min(times[size]):.1f}-{max(times[size]):.1f})" if len(times[size]) > 1 else ""
        print(
            f"| {size >> 20} MiB | {b} x {s} x {h} | {meas:.1f}{spread} | {pred:.1f} | "
            f"{1 + dev:.3f} ({dev:+.1%}) |"
        )
    verdict = "met" if worst <= args.tolerance else "MISSED"
    print(f"largest difference {worst:.1%} (target <= {args.tolerance:.0%}): {verdict}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    sub = p.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fit", help="link figures from a measured run")
    f.add_argument("runs", nargs="+")
    c = sub.add_parser("compare", help="planner vs measured runs")
    c.add_argument("--site", required=True)
    c.add_argument("--tolerance", type=float, default=0.15)
    c.add_argument("runs", nargs="+")
    for q in (f, c):
        q.add_argument("--min-bytes", type=parse_size, default=16 << 20)
    args = p.parse_args()
    return fit(args) if args.cmd == "fit" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
