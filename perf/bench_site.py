"""Scale benchmark for the site loader: a ~100,000-device site must load + validate fast.

Generates an NVL72-like site (1,390 super nodes x 18 nodes x 4 GPUs = 100,080 devices) as
YAML in a temp dir, then times ``load_file`` (compose, build, validate) and reports wall time
and peak memory. Targets: under 1 s and 500 MB on a 2-core machine. Prints figures; asserts
nothing (speed targets are not unit tests).

    python3 perf/bench_site.py [--supernodes N] [--repeat R]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from slurm_supernode.site.loader import load_file  # noqa: E402


def make_site(supernodes: int, nodes_per_sn: int = 18, racks: bool = True) -> str:
    lines = [
        "name: bench-nvl72",
        "vendor: nvidia",
        "node_defaults:",
        "  devices: 4",
        "  device_groups: [[0, 1, 2, 3]]",
        "  gres_type: gb200",
        "  gres_file: /dev/nvidia[0-3]",
        "links:",
        "  node: {bandwidth_GBps: 900, latency_us: 2, kind: nvlink}",
        "  supernode: {bandwidth_GBps: 900, latency_us: 3, kind: nvlink}",
        "  inter: {bandwidth_GBps: 50, latency_us: 6, kind: infiniband}",
        "slurm: {partition: gb200, strategy: block}",
        "node_overrides:",
        f"  - nodes: gb[{1:06d}-{18:06d}]",
        "    memory_mb: 900000",
        "supernodes:",
    ]
    width = 6
    for i in range(supernodes):
        first = i * nodes_per_sn + 1
        last = first + nodes_per_sn - 1
        lines.append(f"  - name: nvl{i:05d}")
        if racks:
            half = first + nodes_per_sn // 2
            lines.append("    racks:")
            lines.append(
                f"      - {{name: r{i:05d}a, nodes: 'gb[{first:0{width}d}-{half - 1:0{width}d}]'}}"
            )
            lines.append(
                f"      - {{name: r{i:05d}b, nodes: 'gb[{half:0{width}d}-{last:0{width}d}]'}}"
            )
        else:
            lines.append(f"    nodes: gb[{first:0{width}d}-{last:0{width}d}]")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("--supernodes", type=int, default=1390)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-racks", action="store_true", help="one hostlist per super node")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.yaml"
        path.write_text(make_site(args.supernodes, racks=not args.no_racks))
        size_kb = path.stat().st_size / 1024
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            site, problems = load_file(path)
            times.append(time.perf_counter() - t0)
            assert site is not None and not problems, problems[:3]
        tracemalloc.start()
        site, problems = load_file(path)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"site: {len(site.supernodes)} super nodes, {len(site.nodes)} nodes, {site.devices} devices"
    )
    print(f"yaml: {size_kb:.0f} KiB, racks: {not args.no_racks}")
    print(
        f"load+validate wall: best {min(times):.3f} s,"
        f" median {sorted(times)[len(times) // 2]:.3f} s (target < 1 s)"
    )
    print(
        f"peak traced Python memory: {peak / 2**20:.1f} MiB; process max RSS: {rss_mb:.1f} MiB "
        f"(target < 500 MB)"
    )
    _refusals()
    return 0


def _refusals() -> None:
    """Absurd sizes are refused from the expression's count, before anything is expanded."""
    from slurm_supernode.site.limits import MAX_SITE_DEVICES, MAX_SITE_NODES

    base = make_site(2, racks=False)
    cases = {
        "one hostlist of 5,000,000 hosts": base.replace(
            "gb[000019-000036]", "'gb[0000000-4999999]'"
        ),
        "five hostlists of 1,000,000 hosts": base.replace(
            "gb[000019-000036]", ",".join(f"'p{k}x[0-999999]'" for k in range(5))
        )
        .replace("',p", ",p")
        .replace("]','", "],"),
        "2-D hostlist of 100,000,000 hosts": base.replace(
            "gb[000019-000036]", "'a[0-9999]b[0-9999]'"
        ),
        f"{MAX_SITE_DEVICES + 8} devices (just over the bound)": base.replace(
            "devices: 4", "devices: 1024"
        )
        .replace("  device_groups: [[0, 1, 2, 3]]\n", "")
        .replace("gb[000019-000036]", "gb[000019-000995]"),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for what, text in cases.items():
            path = Path(tmp) / "bad.yaml"
            path.write_text(text)
            tracemalloc.start()
            t0 = time.perf_counter()
            site, problems = load_file(path)
            wall = time.perf_counter() - t0
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            assert site is None and problems, what
            print(
                f"refuse {what}: {wall * 1000:.1f} ms, peak traced {peak / 2**20:.1f} MiB"
                f" (bounds: {MAX_SITE_NODES} hosts, {MAX_SITE_DEVICES} devices)"
            )
            print(f"  {problems[0].message[:110]}")


if __name__ == "__main__":
    sys.exit(main())
