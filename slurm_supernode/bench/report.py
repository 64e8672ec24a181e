"""Regression report: the latest run of each (site, super nodes, node count) against a
rolling baseline, the median busbw of the last N good runs with the same key.

Why a median of recent good runs: one bad night must not move the baseline, and a slow
drift (a firmware update, a cable) still shows up as the runs before it age out. Runs with
wrong results never enter a baseline. Small messages are latency-bound and noisy, so by
default only sizes >= 1 MiB can fail the report (``min_bytes``); all are shown.
Exit code ``REGRESSION_EXIT`` (3) on any regression, wrong result or busbw below a site
floor, so cron or CI can alert; 0 otherwise; 2 for bad input, 1 for a failed operation.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from slurm_supernode.bench.collectives import CHUNKED
from slurm_supernode.bench.measure_options import format_size
from slurm_supernode.bench.model import ELEMENT_SIZE
from slurm_supernode.bench.store import ResultRow, ResultStore, RunInfo
from slurm_supernode.site.model import DEFAULT_BASELINE_RUNS, DEFAULT_REGRESSION_PCT

REGRESSION_EXIT = 3
FAILING = ("wrong", "below_floor", "regression")


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When a result fails: the defaults are the site model's ``BenchSettings`` defaults."""

    regression_pct: float = DEFAULT_REGRESSION_PCT
    baseline_runs: int = DEFAULT_BASELINE_RUNS
    min_bytes: int = 1 << 20
    floors: tuple[tuple[str, float], ...] = ()  # (scope, min busbw GB/s) at the largest size


@dataclass(frozen=True, slots=True)
class Comparison:
    """One result of the latest run next to its baseline."""

    scope: str
    collective: str
    dtype: str
    size: int
    busbw: float
    latency_us: float
    wrong: int
    baseline_busbw: float | None
    baseline_latency_us: float | None
    baseline_count: int  # runs in the baseline (0: nothing to compare with)
    change_pct: float | None  # busbw against the baseline, negative = slower
    status: str  # ok, new, regression, wrong, below_floor
    judged: bool = True  # measured at a size of at least min_bytes (as requested)

    @property
    def failed(self) -> bool:
        return self.status in FAILING


@dataclass(frozen=True)
class RunReport:
    """The latest run of one group, its comparisons and the group's whole history."""

    run: RunInfo
    thresholds: Thresholds
    comparisons: tuple[Comparison, ...]
    history: tuple[ResultRow, ...] = field(default=(), repr=False)

    @property
    def failures(self) -> tuple[Comparison, ...]:
        return tuple(c for c in self.comparisons if c.failed)


def reaches_min_bytes(row: ResultRow, min_bytes: int) -> bool:
    """Whether the size the run was asked for was at least ``min_bytes``.

    Chunked collectives store the size floored to a multiple of the group's element count
    (``collectives.element_count``): an all_gather asked for 1M over 3 ranks measures 1048574
    bytes, which must still count as 1M, so up to one element per other rank is added back.
    """
    slack = 0
    if row.collective in CHUNKED:
        slack = max(row.group_size - 1, 0) * ELEMENT_SIZE.get(row.dtype, 1)
    return row.size + slack >= min_bytes


def _status(row: ResultRow, base: float | None, th: Thresholds, floor: float | None) -> str:
    if row.wrong:
        return "wrong"
    if floor is not None and row.busbw < floor:
        return "below_floor"
    if base is None:
        return "new"
    if reaches_min_bytes(row, th.min_bytes) and row.busbw < base * (1 - th.regression_pct / 100):
        return "regression"
    return "ok"


def compare_run(
    run: RunInfo, rows: Sequence[ResultRow], earlier: Sequence[ResultRow], th: Thresholds
) -> tuple[Comparison, ...]:
    """Compare ``rows`` (one run) with ``earlier`` results of the same group (pure)."""
    past: dict[tuple, list[ResultRow]] = {}
    for row in earlier:
        if row.good and row.run_id != run.run_id:
            past.setdefault(row.key, []).append(row)
    largest: dict[tuple, int] = {}
    for row in rows:
        k = (row.scope, row.collective, row.dtype)
        largest[k] = max(largest.get(k, 0), row.size)
    floors = dict(th.floors)
    out = []
    for row in sorted(rows, key=lambda r: (r.scope, r.dtype, r.collective, r.size)):
        recent = sorted(past.get(row.key, []), key=lambda r: r.time)[-th.baseline_runs :]
        base = statistics.median(r.busbw for r in recent) if recent else None
        base_lat = statistics.median(r.latency_us for r in recent) if recent else None
        is_largest = row.size == largest[(row.scope, row.collective, row.dtype)]
        floor = floors.get(row.scope) if is_largest else None
        out.append(
            Comparison(
                scope=row.scope,
                collective=row.collective,
                dtype=row.dtype,
                size=row.size,
                busbw=row.busbw,
                latency_us=row.latency_us,
                wrong=row.wrong,
                baseline_busbw=base,
                baseline_latency_us=base_lat,
                baseline_count=len(recent),
                change_pct=(row.busbw / base - 1) * 100 if base else None,
                status=_status(row, base, th, floor),
                judged=reaches_min_bytes(row, th.min_bytes),
            )
        )
    return tuple(out)


def latest_runs(runs: Sequence[RunInfo]) -> list[RunInfo]:
    """The newest run of each group (site, super nodes, node count, kind, settings)."""
    latest: dict[tuple, RunInfo] = {}
    for run in sorted(runs, key=lambda r: (r.time, r.run_id)):
        latest[run.group] = run
    return sorted(latest.values(), key=lambda r: r.group)


def build_reports(
    store: ResultStore, *, site: str | None = None, thresholds: Thresholds = Thresholds()
) -> list[RunReport]:
    """One report per group of the store (or of ``site``), newest run against its baseline."""
    reports = []
    for run in latest_runs(store.runs(site=site)):
        history = [
            r
            for r in store.results(site=run.site, supernode=run.supernode, nodes=run.nodes)
            if (r.kind, r.params) == (run.kind, run.params)  # never another kind's figures
        ]
        rows = [r for r in history if r.run_id == run.run_id]
        earlier = [r for r in history if r.time < run.time or (r.time == run.time and
                   r.run_id < run.run_id)]  # fmt: skip
        reports.append(
            RunReport(
                run=run,
                thresholds=thresholds,
                comparisons=compare_run(run, rows, earlier, thresholds),
                history=tuple(history),
            )
        )
    return reports


def exit_code(reports: Sequence[RunReport]) -> int:
    return REGRESSION_EXIT if any(r.failures for r in reports) else 0


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def format_reports(reports: Sequence[RunReport], *, all_sizes: bool = False) -> str:
    """Text table: per group the compared results (sizes >= min_bytes, and every failure)."""
    if not reports:
        return "# no bench runs stored yet (measure with 'snrun bench submit' or 'snrun doctor')\n"
    lines = []
    for rep in reports:
        run, th = rep.run, rep.thresholds
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(run.time))
        lines += [
            f"# site {run.site or '-'}  super nodes {run.supernode or '-'}  nodes {run.nodes}  "
            f"run {run.run_id[:12]}  {when}  job {run.job_id or '-'}",
            f"# kind {run.kind}  {run.params or 'settings not recorded'}",
            f"# baseline: median busbw of the last {th.baseline_runs} good {run.kind} runs with "
            "these settings; "
            f"regression below -{th.regression_pct:g}% at sizes >= {format_size(th.min_bytes)}",
            f"#{'scope':>9} {'collective':>14} {'dtype':>9} {'size':>6} {'busbw':>8} "
            f"{'baseline':>8} {'change':>7} {'lat_us':>9} {'wrong':>5}  status",
        ]
        for c in rep.comparisons:
            if not (all_sizes or c.judged or c.failed):
                continue
            change = "-" if c.change_pct is None else f"{c.change_pct:+.1f}%"
            lines.append(
                f"{c.scope:>10} {c.collective:>14} {c.dtype:>9} {format_size(c.size):>6} "
                f"{c.busbw:>8.2f} {_fmt(c.baseline_busbw, '8.2f'):>8} {change:>7} "
                f"{c.latency_us:>9.1f} {c.wrong:>5}  {c.status.upper() if c.failed else c.status}"
            )
        fails = rep.failures
        summary = ", ".join(
            f"{sum(c.status == s for c in fails)} {s}" for s in FAILING if any(
                c.status == s for c in fails)
        )  # fmt: skip
        lines.append(
            f"# {len(rep.comparisons)} results compared: "
            + (f"FAILED ({summary})" if fails else "OK")
        )
        lines.append("")
    return "\n".join(lines)
