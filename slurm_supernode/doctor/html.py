"""The doctor's HTML page, beside the bench report: the six steps with their verdicts and a
bar per measured group (node, node pair, super node), the slow ones in red. Self-contained
(inline SVG and CSS), so it can be mailed or kept as a CI artifact."""

from __future__ import annotations

import html
import time

from slurm_supernode.bench.html import _STYLE as BENCH_STYLE
from slurm_supernode.bench.measure_options import format_size
from slurm_supernode.doctor.model import STEP_TITLES, STEPS, VERDICTS, DoctorFacts, DoctorReport
from slurm_supernode.doctor.verdicts import largest, slow_groups

_STYLE = (
    BENCH_STYLE
    + """
td { text-align: left; vertical-align: top; }
tr.fail td { background: #fdd; } tr.warn td { background: #ffe9c4; }
tr.unknown td { background: #eee; } tr.n\\/a td { color: #777; }
.fail { color: #c00; } .warn { color: #b60; } .unknown { color: #666; }
"""
)
_BAR_H, _LABEL_W, _BAR_W = 16, 170, 420


def _bars(title: str, rows: list[tuple[str, float, bool]]) -> str:
    """Horizontal bars (label, GB/s, slow) as an SVG element."""
    if not rows:
        return ""
    top = max(v for _, v, _ in rows) or 1.0
    h = 24 + _BAR_H * len(rows) + 6
    e = html.escape
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_LABEL_W + _BAR_W + 90}" '
        f'height="{h}" font-size="11"><text x="0" y="14" font-weight="bold">{e(title)}'
        "</text>"
    ]
    for i, (label, value, slow) in enumerate(rows):
        y = 22 + i * _BAR_H
        w = max(1.0, _BAR_W * value / top)
        color = "#d62728" if slow else "#1f77b4"
        parts.append(
            f'<text x="0" y="{y + 11}">{e(label)}</text><rect x="{_LABEL_W}" '
            f'y="{y}" width="{w:.1f}" height="{_BAR_H - 3}" fill="{color}"/>'
            f'<text x="{_LABEL_W + w + 4:.1f}" y="{y + 11}">{value:.2f}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def group_charts(facts: DoctorFacts | None, slow_pct: float) -> list[str]:
    if facts is None or facts.bench is None:
        return []
    host_of = {r.rank: r.host for r in facts.ranks}
    sn_of = {r.rank: r.supernode for r in facts.ranks}
    out = []
    for scope in ("node", "pairs", "pairs_shift", "supernode", "inter"):
        groups = largest(facts.bench.group_results, scope)
        if not groups:
            continue
        slow = {g.group for g in slow_groups(groups, slow_pct)}
        rows = []
        for g in groups:
            if scope == "supernode":
                label = ",".join(sorted({sn_of.get(r, "?") for r in g.ranks}))
            else:
                label = "+".join(dict.fromkeys(host_of.get(r, f"rank{r}") for r in g.ranks))
            rows.append((label[:28], g.busbw, g.group in slow))
        out.append(_bars(f"{scope}: all_reduce {format_size(groups[0].size)} busbw (GB/s)", rows))
    return out


def render_html(
    report: DoctorReport,
    facts: DoctorFacts | None,
    *,
    slow_pct: float,
    bench_report: str | None = None,
) -> str:
    """The whole page (UTF-8, no external resources)."""
    e = html.escape
    verdict = VERDICTS[report.status]
    title = f"snrun doctor: site {report.site}, job {report.job_id or '-'}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(title)}</title><style>{_STYLE}</style></head><body>",
        f'<h1>{e(title)}: <span class="{e(verdict)}">{e(verdict.upper())}</span></h1>',
        f"<p>Generated {e(time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime()))}; "
        f"{len(report.hosts)} node(s); measured "
        f"{e(time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(report.time)))}. Each step "
        "only after the one before it passes (docs/doctor.md).",
    ]
    if bench_report:
        parts.append(f' Bench history: <a href="{e(bench_report)}">{e(bench_report)}</a>.')
    parts.append("</p>")
    for step in STEPS:
        found = [f for f in report.findings if f.step == step]
        sv = VERDICTS[report.step_status(step)]
        parts += [
            f'<h2>{e(STEP_TITLES[step])}: <span class="{e(sv)}">{e(sv)}</span></h2>',
            "<table><tr><th>check</th><th>where</th><th>verdict</th><th>measured</th>"
            "<th>site expects</th><th>next</th></tr>",
        ]
        for f in found:
            parts.append(
                f'<tr class="{e(f.verdict)}"><td>{e(f.check)}</td><td>{e(f.where)}'
                f"</td><td>{e(f.verdict)}</td><td>{e(f.measured)}</td><td>"
                f"{e(f.expected)}</td><td>{e(f.next)}</td></tr>"
            )
        parts.append("</table>")
        if step == "cross":
            parts += group_charts(facts, slow_pct)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
