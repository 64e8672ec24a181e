"""The busy-cluster figures of the scheduling benchmark (bench_sched.py), from replay rows.

Pure functions over the rows bench_sched.py writes (submit/start/end in Slurm's clock, GPUs
asked, trays allocated, the run time the job sleeps):

- throughput over a window that leaves out the ramp-up at the start and the drain at the end
  (the arrivals stop, the queue empties and every policy ends alike): GPU-seconds of work done
  inside the window per second, i.e. GPU-hours of work per hour (a rate: the replay's time
  compression cancels out);
- the wait (start - submit) per job size class at p50/p95/p99 (nearest rank); a job that was
  still pending when the replay was cut counts with its wait up to the cut, a lower bound, and
  the figure says how many such jobs its class holds;
- bounded slowdown max(1, (wait + run) / max(run, TAU_S)) (Feitelson), over the same jobs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable

TAU_S = 10.0  # bounded slowdown's floor on the run time (replay seconds = 10 trace minutes)
CLASSES = ("1 tray", "2-16 trays", ">16 trays")


def percentile(values: Iterable[float], q: float) -> float | None:
    """Nearest-rank percentile (the smallest value with at least q% of values <= it)."""
    s = sorted(values)
    if not s:
        return None
    return s[min(len(s) - 1, max(0, math.ceil(q / 100 * len(s)) - 1))]


def bounded_slowdown(wait_s: float, run_s: float, tau_s: float = TAU_S) -> float:
    return max(1.0, (wait_s + run_s) / max(run_s, tau_s))


def size_class(trays: int) -> str:
    """One tray; inside one super node (2-16 trays); over one super node."""
    return CLASSES[0] if trays <= 1 else CLASSES[1] if trays <= 16 else CLASSES[2]


def window(rows: list[dict], warmup_s: float) -> tuple[float, float] | None:
    """From the first submission + warmup to the last submission (the drain left out)."""
    subs = [r["submit"] for r in rows if r.get("submit") is not None]
    if not subs or max(subs) - min(subs) <= warmup_s:
        return None
    return min(subs) + warmup_s, max(subs)


def overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def throughput(rows: list[dict], w0: float, w1: float, gpus_per_node: int) -> dict:
    """GPU-hours per hour inside [w0, w1]: of GPUs asked (work) and of GPUs allocated."""
    ran = [r for r in rows if r.get("started") and r.get("end") is not None]
    asked = sum(r["gpus"] * overlap(r["start"], r["end"], w0, w1) for r in ran)
    alloc = sum(
        r["nodes_alloc"] * gpus_per_node * overlap(r["start"], r["end"], w0, w1) for r in ran
    )
    span = w1 - w0
    return {"gpu_h_per_h": round(asked / span, 1), "alloc_gpu_h_per_h": round(alloc / span, 1)}


def waits(rows: list[dict], w0: float, w1: float) -> list[dict]:
    """Jobs submitted inside [w0, w1]: wait, run time, class, censored (never started)."""
    out = []
    for r in rows:
        if r.get("submit") is None or not w0 <= r["submit"] <= w1:
            continue
        if r.get("started") and r.get("start") is not None:
            out.append({"wait": r["start"] - r["submit"], "censored": False} | _shape(r))
        elif r.get("end") is not None:  # cancelled at the cut before it started
            out.append({"wait": r["end"] - r["submit"], "censored": True} | _shape(r))
    return out


def _shape(r: dict) -> dict:
    return {"run": r["duration_s"], "cls": size_class(r["nodes_asked"])}


def wait_table(ws: list[dict]) -> dict[str, dict]:
    """Per size class: jobs, censored ones, wait p50/p95/p99, mean bounded slowdown."""
    out = {}
    for cls in ("all", *CLASSES):
        sel = [w for w in ws if cls in ("all", w["cls"])]
        if not sel:
            continue
        wt = [w["wait"] for w in sel]
        out[cls] = {
            "jobs": len(sel),
            "censored": sum(w["censored"] for w in sel),
            "p50": percentile(wt, 50),
            "p95": percentile(wt, 95),
            "p99": percentile(wt, 99),
            "bsld_mean": round(
                statistics.mean(bounded_slowdown(w["wait"], w["run"]) for w in sel), 2
            ),
        }
    return out
