"""A profiler trace (torch.profiler's Chrome JSON) reduced to what a step spends: compute,
communication no compute overlapped (exposed: what the step waits for) and communication
overlapped by compute. Pure; no torch, no pandas.

Why not HolisticTraceAnalysis: its temporal breakdown and comm/compute overlap are computed
over GPU kernels on CUDA streams, and a gloo (CPU) trace has none: the collectives run on
gloo's worker threads (``gloo:all_reduce`` ...) while the rank's main thread waits. HTA also
brings pandas and plotly into every rank. The same idea is applied here to whichever timeline
the trace has:

- with GPU kernels: communication = NCCL/HCCL kernels, compute = every other kernel;
- without: communication = the ``gloo:*`` spans of the gloo threads, compute = the rank's
  operators on its main thread (``c10d::*`` launches left out).

Overlaps are unions of intervals (nested operators count once); everything is clipped to the
profiled window. ``by_group``: exposed-or-overlapped communication seconds per process group
kind where the trace names the group (NCCL's ``Process Group Description``, matched to a
layout kind through its ranks), else per backend (``gloo``, ``nccl``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Interval = tuple[float, float]  # start, end (microseconds, as the trace has them)
_COMM_KERNELS = ("nccl", "hccl", "allreduce", "all_reduce", "allgather", "reducescatter")


@dataclass(frozen=True)
class Breakdown:
    """One rank's profiled window, in seconds."""

    window_s: float
    compute_s: float
    exposed_comm_s: float
    overlapped_comm_s: float
    by_group: dict[str, float] = field(default_factory=dict)

    @property
    def comm_share(self) -> float:
        """Exposed communication as a share of compute plus it (the planner's measure, with
        what overlap hides taken out)."""
        busy = self.compute_s + self.exposed_comm_s
        return self.exposed_comm_s / busy if busy > 0 else 0.0


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """Disjoint, sorted intervals covering the same time."""
    out: list[Interval] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def length(intervals: Sequence[Interval]) -> float:
    return sum(end - start for start, end in intervals)


def intersect(a: Sequence[Interval], b: Sequence[Interval]) -> list[Interval]:
    """The common time of two disjoint sorted interval lists."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _spans(events: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e for e in events if e.get("ph") == "X" and isinstance(e.get("dur"), (int, float))]


def _interval(e: Mapping[str, Any]) -> Interval:
    return float(e["ts"]), float(e["ts"]) + float(e["dur"])


def _is_comm_kernel(e: Mapping[str, Any]) -> bool:
    name = str(e.get("name", "")).lower()
    return any(k in name for k in _COMM_KERNELS)


def _window(events: Sequence[Mapping[str, Any]]) -> Interval:
    """The profiled window: the profiler's own span where it wrote one, else all events."""
    for e in events:
        if str(e.get("name", "")).startswith("PyTorch Profiler"):
            return _interval(e)
    starts = [float(e["ts"]) for e in events]
    ends = [float(e["ts"]) + float(e["dur"]) for e in events]
    return (min(starts), max(ends)) if starts else (0.0, 0.0)


def _main_thread(events: Sequence[Mapping[str, Any]]) -> Any:
    """The thread that stepped the optimizer (else the one with the most operator time)."""
    for e in events:
        if str(e.get("name", "")).startswith("Optimizer.step"):
            return e.get("tid")
    busy: dict[Any, float] = {}
    for e in events:
        if e.get("cat") == "cpu_op":
            busy[e.get("tid")] = busy.get(e.get("tid"), 0.0) + float(e["dur"])
    return max(busy, key=lambda t: busy[t]) if busy else None


def timelines(trace: Mapping[str, Any]) -> tuple[list[Interval], list[tuple[str, Interval]]]:
    """(compute intervals, [(group key, comm interval)]) of a trace."""
    events = _spans(trace.get("traceEvents") or [])
    kernels = [e for e in events if e.get("cat") == "kernel"]
    if kernels:
        compute = [_interval(e) for e in kernels if not _is_comm_kernel(e)]
        comm = [(_group_of(e, trace), _interval(e)) for e in kernels if _is_comm_kernel(e)]
        return compute, comm
    main = _main_thread(events)
    compute = [
        _interval(e)
        for e in events
        if e.get("tid") == main
        and e.get("cat") in ("cpu_op", "user_annotation")
        and not str(e.get("name", "")).startswith(("c10d::", "gloo:", "ProfilerStep"))
    ]
    comm = [("gloo", _interval(e)) for e in events if str(e.get("name", "")).startswith("gloo:")]
    return compute, comm


def _group_of(e: Mapping[str, Any], trace: Mapping[str, Any]) -> str:
    """A kernel's process group, in words: its description (``tp``, ``dp``, ``default_pg``)
    where NCCL's record names one, else the backend."""
    args = e.get("args") or {}
    desc = args.get("Process Group Description") or args.get("pg_desc")
    if desc:
        return str(desc)
    name = str(args.get("Process Group Name") or "")
    for pg in (trace.get("distributedInfo") or {}).get("pg_config") or []:
        if str(pg.get("pg_name")) == name and pg.get("pg_desc"):
            return str(pg["pg_desc"])
    return "hccl" if "hccl" in str(e.get("name", "")).lower() else "nccl"


def reduce_trace(trace: Mapping[str, Any], kinds: Mapping[str, str] | None = None) -> Breakdown:
    """The window's compute, exposed and overlapped communication. ``kinds``: a group
    description -> the layout's kind for it (``default_pg`` -> ``dp``), where known."""
    events = _spans(trace.get("traceEvents") or [])
    if not events:
        return Breakdown(0.0, 0.0, 0.0, 0.0)
    window = [_window(events)]
    compute = intersect(union(c for c in timelines(trace)[0]), window)
    comm_by: dict[str, list[Interval]] = {}
    for key, span in timelines(trace)[1]:
        comm_by.setdefault((kinds or {}).get(key, key), []).append(span)
    comm = intersect(union(s for spans in comm_by.values() for s in spans), window)
    overlapped = intersect(comm, compute)
    by_group = {k: length(intersect(union(v), window)) / 1e6 for k, v in sorted(comm_by.items())}
    return Breakdown(
        window_s=length(window) / 1e6,
        compute_s=length(compute) / 1e6,
        exposed_comm_s=(length(comm) - length(overlapped)) / 1e6,
        overlapped_comm_s=length(overlapped) / 1e6,
        by_group=by_group,
    )
