"""A self-contained HTML page of the report: tables plus hand-made inline SVG plots.

No plotting dependency (the page is built on login nodes and in cron): ``line_chart``
draws polylines on log or linear axes. Two plots per group and dtype: busbw against size
(latest run solid, baseline dashed) and busbw at the largest size over time.
"""

from __future__ import annotations

import html
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from slurm_supernode.bench.measure_options import format_size
from slurm_supernode.bench.report import RunReport

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")
_W, _H, _ML, _MR, _MT, _MB = 640, 320, 64, 150, 28, 44


@dataclass(frozen=True, slots=True)
class Series:
    label: str
    points: tuple[tuple[float, float], ...]
    color: str
    dashed: bool = False


def _ticks(lo: float, hi: float, log: bool) -> list[float]:
    if log:
        a, b = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
        exp_step = max(1, (b - a) // 8)
        return [2.0**e for e in range(a, b + 1, exp_step)]
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 5, 10) if m * mag >= raw), default=raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step) + 1)]


@dataclass(frozen=True, slots=True)
class _Frame:
    """A chart's data range and plot area: data to SVG coordinates."""

    x0: float
    x1: float
    y0: float
    y1: float
    log_x: bool
    pw: int = _W - _ML - _MR
    ph: int = _H - _MT - _MB

    def sx(self, x: float) -> float:
        if self.log_x:
            span = math.log2(self.x1) - math.log2(self.x0)
            return _ML + (math.log2(x) - math.log2(self.x0)) / span * self.pw
        return _ML + (x - self.x0) / (self.x1 - self.x0) * self.pw

    def sy(self, y: float) -> float:
        return _MT + self.ph - (y - self.y0) / (self.y1 - self.y0) * self.ph


def line_chart(
    title: str,
    series: Sequence[Series],
    *,
    x_label: str,
    y_label: str,
    log_x: bool = False,
    x_format: Callable[[float], str] = lambda v: f"{v:g}",
) -> str:
    """An SVG element (well-formed XML) with one polyline per series and a legend."""
    pts = [p for s in series for p in s.points if not log_x or p[0] > 0]
    if not pts:
        return ""
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1 = min(xs), max(xs)
    if x0 == x1:
        x0, x1 = (x0 / 2, x1 * 2) if log_x else (x0 - 1, x1 + 1)
    frame = _Frame(x0, x1, 0.0, max(ys) * 1.08 or 1.0, log_x)
    pw, ph = frame.pw, frame.ph
    e = html.escape
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}" font-family="sans-serif" font-size="11">',
        f'<text x="{_W / 2:.0f}" y="16" text-anchor="middle" font-size="13">{e(title)}</text>',
        f'<rect x="{_ML}" y="{_MT}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>',
    ]
    out += _grid(frame, x_format)
    out.append(
        f'<text x="{_ML + pw / 2:.0f}" y="{_H - 6}" text-anchor="middle">{e(x_label)}</text>'
    )
    out.append(
        f'<text x="14" y="{_MT + ph / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_MT + ph / 2:.0f})">{e(y_label)}</text>'
    )
    for i, s in enumerate(series):
        out += _series(frame, i, s)
    out.append("</svg>")
    return "\n".join(out)


def _grid(frame: _Frame, x_format: Callable[[float], str]) -> list[str]:
    """The grid lines and tick labels of both axes."""
    x0, x1, pw, ph = frame.x0, frame.x1, frame.pw, frame.ph
    out = []
    for t in _ticks(x0, x1, frame.log_x):
        if x0 <= t <= x1:
            x = frame.sx(t)
            out.append(
                f'<line x1="{x:.1f}" y1="{_MT}" x2="{x:.1f}" y2="{_MT + ph}" stroke="#eee"/>'
            )
            label = html.escape(x_format(t))
            out.append(f'<text x="{x:.1f}" y="{_MT + ph + 14}" text-anchor="middle">{label}</text>')
    for t in _ticks(frame.y0, frame.y1, False):
        y = frame.sy(t)
        out.append(f'<line x1="{_ML}" y1="{y:.1f}" x2="{_ML + pw}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{_ML - 4}" y="{y + 4:.1f}" text-anchor="end">{t:g}</text>')
    return out


def _series(frame: _Frame, i: int, s: Series) -> list[str]:
    """One series: its polyline, its points and its legend entry (``i``-th line)."""
    points = sorted(p for p in s.points if not frame.log_x or p[0] > 0)
    if not points:
        return []
    sx, sy = frame.sx, frame.sy
    coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in points)
    dash = ' stroke-dasharray="5,4"' if s.dashed else ""
    out = [f'<polyline points="{coords}" fill="none" stroke="{s.color}" stroke-width="1.8"{dash}/>']
    for x, y in points:
        out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.2" fill="{s.color}"/>')
    ly = _MT + 12 + 15 * i
    out.append(
        f'<line x1="{_W - _MR + 10}" y1="{ly - 4}" x2="{_W - _MR + 30}" y2="{ly - 4}" '
        f'stroke="{s.color}" stroke-width="2"{dash}/>'
    )
    out.append(f'<text x="{_W - _MR + 34}" y="{ly}">{html.escape(s.label)}</text>')
    return out


def _date(t: float) -> str:
    return time.strftime("%m-%d %H:%M", time.gmtime(t))


def _size_charts(rep: RunReport) -> list[str]:
    charts = []
    keys = sorted({(c.scope, c.dtype) for c in rep.comparisons})
    for scope, dtype in keys:
        colls = sorted(
            {c.collective for c in rep.comparisons if (c.scope, c.dtype) == (scope, dtype)}
        )
        series = []
        for i, coll in enumerate(colls):
            rows = [c for c in rep.comparisons if (c.scope, c.dtype, c.collective) ==
                    (scope, dtype, coll)]  # fmt: skip
            color = PALETTE[i % len(PALETTE)]
            series.append(Series(coll, tuple((c.size, c.busbw) for c in rows), color))
            base = tuple((c.size, c.baseline_busbw) for c in rows if c.baseline_busbw is not None)
            if base:
                series.append(Series(f"{coll} (baseline)", base, color, dashed=True))
        charts.append(
            line_chart(
                f"busbw vs size: scope {scope}, {dtype}",
                series,
                x_label="size (bytes)",
                y_label="busbw (GB/s)",
                log_x=True,
                x_format=lambda v: format_size(int(v)),
            )
        )
    return charts


def _history_charts(rep: RunReport) -> list[str]:
    charts = []
    keys = sorted({(r.scope, r.dtype) for r in rep.history})
    for scope, dtype in keys:
        rows = [r for r in rep.history if (r.scope, r.dtype) == (scope, dtype)]
        series = []
        for i, coll in enumerate(sorted({r.collective for r in rows})):
            mine = [r for r in rows if r.collective == coll]
            size = max(r.size for r in mine)
            pts = tuple((r.time, r.busbw) for r in mine if r.size == size)
            series.append(Series(f"{coll} {format_size(size)}", pts, PALETTE[i % len(PALETTE)]))
        charts.append(
            line_chart(
                f"history: scope {scope}, {dtype}, largest size",
                series,
                x_label="run time (UTC)",
                y_label="busbw (GB/s)",
                x_format=_date,
            )
        )
    return charts


_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; font-size: 12px; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #f4f4f4; }
tr.regression td, tr.wrong td, tr.below_floor td { background: #fdd; }
tr.new td { color: #666; }
.ok { color: #080; } .failed { color: #c00; }
svg { margin: 0 1em 1em 0; }
"""


def render_html(reports: Sequence[RunReport], *, title: str = "snrun bench report") -> str:
    """The whole page (UTF-8, no external resources)."""
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        f"<p>Generated {e(time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime()))}. "
        "Bandwidths in GB/s as nccl-tests defines them (busbw = algbw x factor).</p>",
    ]
    if not reports:
        parts.append("<p>No bench runs stored yet.</p>")
    for rep in reports:
        run, th = rep.run, rep.thresholds
        verdict = (
            f'<span class="failed">FAILED: {len(rep.failures)} result(s)</span>'
            if rep.failures
            else '<span class="ok">OK</span>'
        )
        parts += [
            f"<h2>site {e(run.site or '-')}, super nodes {e(run.supernode or '-')}, "
            f"{run.nodes} node(s): {verdict}</h2>",
            f"<p>Latest run <code>{e(run.run_id)}</code> at {e(_date(run.time))} UTC, job "
            f"{e(run.job_id or '-')}, {run.world_size} ranks, {e(run.backend)} "
            f"({e(run.versions.comm)}), torch {e(run.versions.torch)}, driver "
            f"{e(run.versions.driver or '-')}, timing {e(run.timing)}. Baseline: median of the "
            f"last {th.baseline_runs} good runs; regression below -{th.regression_pct:g}% at "
            f"sizes &gt;= {e(format_size(th.min_bytes))}.</p>",
            "<div>",
            *_size_charts(rep),
            *_history_charts(rep),
            "</div>",
            "<table><tr><th>scope</th><th>collective</th><th>dtype</th><th>size</th>"
            "<th>busbw</th><th>baseline</th><th>change</th><th>latency (us)</th>"
            "<th>#wrong</th><th>status</th></tr>",
        ]
        for c in rep.comparisons:
            change = "" if c.change_pct is None else f"{c.change_pct:+.1f}%"
            base = "" if c.baseline_busbw is None else f"{c.baseline_busbw:.2f}"
            parts.append(
                f'<tr class="{e(c.status)}"><td>{e(c.scope)}</td><td>{e(c.collective)}</td>'
                f"<td>{e(c.dtype)}</td><td>{e(format_size(c.size))}</td><td>{c.busbw:.2f}</td>"
                f"<td>{base}</td><td>{change}</td><td>{c.latency_us:.1f}</td><td>{c.wrong}</td>"
                f"<td>{e(c.status)}</td></tr>"
            )
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
