"""Planner scale bench: ``snrun plan`` on ~10k and 100,800 GPUs (NVL72-like sites).

Two kinds of figures, small and large side by side so growth is visible:
- in-process: ``build_rank_map`` (tp=8, pp=8, hosts reversed so the sort works), the JSON
  writer, the text rendering and the cost estimate, wall and CPU seconds;
- end to end: ``python -m snrun plan --json`` and text as subprocesses, with the site loaded
  from YAML (bench_site.make_site), output to a file: wall, CPU (user+sys) and max RSS.
Targets (issue 14): end to end <= 2 s and < 1 GB at 100,800 GPUs for JSON and text, and
large/small time <= 11x. CPU seconds are printed too: on a shared machine wall time also
measures the neighbours. Prints figures; asserts nothing. Run: ``python3 perf/bench_plan.py``.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf"))

from bench_site import make_site as site_yaml  # noqa: E402

from slurm_supernode.hostlist import fold  # noqa: E402
from slurm_supernode.placement.cost import Workload, plan_cost  # noqa: E402
from slurm_supernode.placement.llm_presets import model_spec  # noqa: E402
from slurm_supernode.placement.model import Layout  # noqa: E402
from slurm_supernode.placement.optimum import SEARCH_BUDGET  # noqa: E402
from slurm_supernode.placement.planjson import write_plan_json  # noqa: E402
from slurm_supernode.placement.rankmap import build_rank_map  # noqa: E402
from slurm_supernode.placement.render import render_plan  # noqa: E402
from tests.placement.sites import make_site, nvl72_site  # noqa: E402

TP, PP = 8, 8


def timed(fn):
    gc.collect()
    w0, c0 = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - w0, time.process_time() - c0


def in_process(supernodes: int) -> dict[str, float]:
    site = nvl72_site(supernodes)
    hosts = [n.hostname for n in site.nodes][::-1]  # reversed: the sort has real work to do
    layout = Layout(tp=TP, pp=PP)
    rm, w_build, c_build = timed(lambda: build_rank_map(site, hosts, layout))
    _, w_str, _ = timed(lambda: build_rank_map(site, fold(hosts), layout))
    _, w_json, c_json = timed(lambda: write_plan_json(rm, io.StringIO(), {"site": "x"}))
    _, w_text, _ = timed(lambda: render_plan(rm, site_name="x"))
    work = Workload(model_spec("llama-405b"), tflops=2500)
    _, w_cost, _ = timed(lambda: plan_cost(site, rm, work))
    return {
        "gpus": rm.world_size,
        "build_s": w_build,
        "build_cpu_s": c_build,
        "build_from_hostlist_s": w_str,
        "json_write_s": w_json,
        "json_write_cpu_s": c_json,
        "text_render_s": w_text,
        "cost_s": w_cost,
    }


def end_to_end(supernodes: int, tmp: Path) -> dict[str, float]:
    """Wall, CPU and max RSS of ``snrun plan`` (JSON, text) as a user runs it."""
    path = tmp / f"site{supernodes}.yaml"
    path.write_text(site_yaml(supernodes, racks=False))
    last = supernodes * 18
    nodelist = f"gb[{1:06d}-{last:06d}]"
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    out: dict[str, float] = {}
    for kind, extra in (("json", ["--json"]), ("text", [])):
        cmd = [sys.executable, "-m", "slurm_supernode", "plan", "--site", str(path)]
        cmd += ["--nodelist", nodelist, "--tp", str(TP), "--pp", str(PP), *extra]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(tmp / f"out-{kind}", "w") as sink:
            w0 = time.perf_counter()
            subprocess.run(cmd, stdout=sink, check=True, env=env)
            wall = time.perf_counter() - w0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        out[f"cli_{kind}_s"] = wall
        out[f"cli_{kind}_cpu_s"] = cpu
        # RUSAGE_CHILDREN keeps the largest child so far: run small before large
        out[f"cli_{kind}_maxrss_mb"] = after.ru_maxrss / 1024
        out[f"cli_{kind}_output_mb"] = (tmp / f"out-{kind}").stat().st_size / 2**20
    return out


def search_at_budget(runs: int = 5) -> list[float]:
    """Wall seconds of a rank map whose crossing minimum needs the whole search budget
    (docs/planner.md's "stops after 20,000 steps"): groups that split nodes unevenly (dp
    stride 2 over 8-rank nodes) on 18 + 7 nodes, no bound reached, the search gives up."""
    site = make_site(2, 18, 8)
    names = [n.hostname for n in site.nodes]
    hosts = names[:18] + names[18:25]
    times = []
    for _ in range(runs):
        rm, wall, _ = timed(lambda: build_rank_map(site, hosts, Layout(tp=2, pp=2, etp=1)))
        assert rm.crossing_min["dp"] is None, "the case no longer exhausts the budget"
        times.append(wall)
    return times


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--small", type=int, default=144, help="super nodes of the small site")
    p.add_argument("--large", type=int, default=1400, help="super nodes of the large site")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        small = in_process(args.small) | end_to_end(args.small, Path(tmp))
        large = in_process(args.large) | end_to_end(args.large, Path(tmp))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'figure':<24}{'small':>12}{'large':>12}{'ratio':>8}")
    for key in small:
        a, b = small[key], large[key]
        ratio = b / a if a else float("nan")
        fmt = "{:>12.0f}" if key == "gpus" else "{:>12.3f}"
        print(f"{key:<24}" + fmt.format(a) + fmt.format(b) + f"{ratio:>8.1f}")
    for kind in ("json", "text"):
        wall, cpu = large[f"cli_{kind}_s"], large[f"cli_{kind}_cpu_s"]
        rss = large[f"cli_{kind}_maxrss_mb"]
        ratio = wall / small[f"cli_{kind}_s"]
        ok = wall <= 2.0 and rss < 1024 and ratio <= 11
        print(
            f"snrun plan {kind:<4} at {large['gpus']:.0f} GPUs: {wall:.2f} s wall "
            f"({cpu:.2f} s CPU), {rss:.0f} MB max RSS, large/small {ratio:.1f}x "
            f"(target <= 2 s, < 1 GB, <= 11x): {'met' if ok else 'MISSED'}"
        )
    times = sorted(search_at_budget())
    print(
        f"crossing minimum at its {SEARCH_BUDGET:,}-step search budget (25 nodes, not computed): "
        f"rank map {times[len(times) // 2]:.2f} s median, {times[-1]:.2f} s max of {len(times)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
