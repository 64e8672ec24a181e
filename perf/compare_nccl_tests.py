"""Print snrun bench all_reduce figures next to nccl-tests' on the same machine.

Usage: python3 perf/compare_nccl_tests.py perf/results/h200x2/events_bf16.json [...]
Reference: nccl-tests 2.19.6 ``all_reduce_perf -g 2``, bf16, 2 x H200 (NV18), NCCL 2.28.9,
from /work/shared/reference/field-facts.md. Goals: busbw >= 0.98x at >= 64 MiB, >= 0.9x at
1-16 MiB, small-message latency within 1.3x.
"""

from __future__ import annotations

import json
import sys

# size -> (time_us, busbw GB/s) of nccl-tests
NCCL_TESTS = {
    1 << 10: (12.0, 0.09),
    1 << 20: (15.6, 67.3),
    16 << 20: (77.5, 216.4),
    256 << 20: (886.0, 302.9),
    4 << 30: (12310.0, 348.8),
}


def _size(size: int) -> str:
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if size >= 1 << shift:
            return f"{size >> shift}{unit}"
    return str(size)


def goal(size: int) -> tuple[str, float]:
    if size >= 64 << 20:
        return "busbw", 0.98
    if size >= 1 << 20:
        return "busbw", 0.90
    return "latency", 1.3


def main(paths: list[str]) -> int:
    missed = 0
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            run = json.load(fh)
        rows = {
            r["size"]: r
            for r in run["results"]
            if r["collective"] == "all_reduce" and r["dtype"] == "bfloat16"
        }
        print(f"# {path}: timing {run['timing']}, {run['versions']['comm']}")
        head = ("size", "time_us", "ref_us", "busbw", "ref_bw", "ratio")
        print("{:>6} {:>9} {:>8} {:>8} {:>7} {:>6}  goal".format(*head))
        for size, (ref_us, ref_bw) in NCCL_TESTS.items():
            if size not in rows:
                continue
            r = rows[size]
            kind, target = goal(size)
            if kind == "busbw":
                ratio, ok = r["busbw"] / ref_bw, r["busbw"] / ref_bw >= target
            else:
                ratio, ok = r["time_us"] / ref_us, r["time_us"] / ref_us <= target
            missed += not ok
            label = f"{kind} {'>=' if kind == 'busbw' else '<='} {target}x"
            print(
                f"{_size(size):>6} {r['time_us']:>9.2f} {ref_us:>8.1f} {r['busbw']:>8.2f} "
                f"{ref_bw:>7.2f} {ratio:>6.3f}  {label}: {'met' if ok else 'MISSED'}"
            )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
