"""A job's HTML report: step time per node over time, device utilization and power, the
communication share against the plan (``observe/over_time``: reduced while read, so a week's
records plot in bounded memory), and the summary's tables. Self-contained (inline SVG
and CSS, no scripts), built with the bench report's charts (bench/html.py: ``line_chart``, its
style and palette), so there is one way of drawing in the project and no plotting dependency.

Pure: the summary and the figures over time in, the page out. It lives in api/ because the
charts are bench's (above observe/ in the layers).
"""

from __future__ import annotations

import html
import statistics
import time
from collections.abc import Iterable, Mapping

from slurm_supernode.bench.html import _STYLE as BENCH_STYLE
from slurm_supernode.bench.html import PALETTE, Series, line_chart
from slurm_supernode.observe.metrics_text import (
    UNKNOWN,
    comm_line,
    pct,
    rate,
    seconds,
    share,
    size,
)
from slurm_supernode.observe.over_time import OverTime, Points
from slurm_supernode.observe.summary import AttemptSummary

_STYLE = BENCH_STYLE + "tr.slow td { background: #fdd; } tr.stale td { color: #999; }\n"


def _since(points: Points, t0: float) -> Points:
    return tuple(((t - t0) / 60, v) for t, v in points)


def _series_by_node(
    summary: AttemptSummary, by_node: Mapping[str, Points], t0: float
) -> list[Series]:
    out = []
    for i, node in enumerate(n.node for n in summary.nodes):
        pts = by_node.get(node)
        if pts:
            out.append(Series(node, _since(pts, t0), PALETTE[i % len(PALETTE)]))
    return out


def charts(summary: AttemptSummary, over: OverTime) -> list[str]:
    """The SVG charts (each an empty string when it has nothing to draw: then left out)."""
    if over.t0 is None:
        return []
    t0 = over.t0
    x = f"minutes since {time.strftime('%H:%M:%S', time.localtime(t0))}"
    out = [
        line_chart(
            "step time per node",
            _series_by_node(summary, over.step_s, t0),
            x_label=x,
            y_label="step time (s)",
        ),
        line_chart(
            "device utilization (mean of the node's devices)",
            _series_by_node(summary, over.util_percent, t0),
            x_label=x,
            y_label="utilization (%)",
        ),
        line_chart(
            "device power (sum of the node's devices)",
            _series_by_node(summary, over.power_w, t0),
            x_label=x,
            y_label="power (W)",
        ),
    ]
    measured, plan = over.comm_percent, over.plan_percent
    comm = [Series("measured (exposed)", _since(measured, t0), PALETTE[0])] if measured else []
    if plan:
        comm.append(Series("plan", _since(plan, t0), PALETTE[1], dashed=True))
    out.append(
        line_chart(
            "communication share of a step vs the plan",
            comm,
            x_label=x,
            y_label="share of a step (%)",
        )
    )
    return [c for c in out if c]


def _node_table(summary: AttemptSummary) -> Iterable[str]:
    e = html.escape
    yield (
        "<table><tr><th>node</th><th>super node</th><th>sampled</th><th>cpu</th><th>memory</th>"
        "<th>devices</th><th>util</th><th>power</th><th>max temp</th><th>step</th>"
        "<th>communication</th><th>plan</th><th>slow</th></tr>"
    )
    for n in summary.nodes:
        utils = [d.util_percent for d in n.devices if d.util_percent is not None]
        power = [d.power_w for d in n.devices if d.power_w is not None]
        temps = [d.temperature_c for d in n.devices if d.temperature_c is not None]
        cls = "slow" if n.slow else ("stale" if n.stale else "")
        slow = f"x{n.slow.ratio:.2f}: {n.slow.evidence}" if n.slow else ""
        cells = [
            n.node,
            n.supernode or "-",
            UNKNOWN if n.age_s is None else f"{n.age_s:.0f} s ago",
            pct(n.cpu_percent),
            f"{size(n.mem_used_bytes)} / {size(n.mem_total_bytes)}",
            str(len(n.devices)),
            pct(statistics.mean(utils) if utils else None),
            f"{sum(power):.0f} W" if power else UNKNOWN,
            f"{max(temps):.0f} C" if temps else UNKNOWN,
            seconds(n.step_s),
            share(n.comm.share if n.comm else None),
            share(n.comm.plan_share if n.comm else None),
            slow,
        ]
        yield f'<tr class="{cls}">' + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>"
    yield "</table>"


def render_report(summary: AttemptSummary, over: OverTime) -> str:
    """The whole page (UTF-8, no external resources)."""
    e = html.escape
    job = summary.job_id if summary.job_id is not None else "?"
    title = f"snrun job {job}, attempt {summary.attempt}"
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(summary.t))
    throughput = (
        rate(summary.tokens_per_s, " tokens")
        if summary.tokens_per_s is not None
        else rate(summary.samples_per_s, " samples")
    )
    ckpt = summary.checkpoint_age_s
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        f"<p>{e(summary.state or '?')}, user {e(summary.user)}, {len(summary.nodes)} node(s), "
        f"job directory <code>{e(summary.job_dir)}</code>; figures as of {e(when)}.</p>",
        "<ul>",
        f"<li>step time {e(seconds(summary.step_s))} (median of the ranks' last steps), at step "
        f"{e(str(summary.last_step) if summary.last_step is not None else UNKNOWN)}</li>",
        f"<li>throughput {e(throughput)}; checkpoint "
        f"{e(UNKNOWN if ckpt is None else seconds(ckpt) + ' ago')}</li>",
        f"<li>{e(comm_line(summary.comm))}</li>",
        *(
            f'<li class="failed">slow node {e(m.node)}'
            f"{e(f' ({m.supernode})' if m.supernode else '')}: x{m.ratio:.2f}, {e(m.evidence)}</li>"
            for m in summary.slow
        ),
        *(f"<li>{e(m)}</li>" for m in summary.missing),
        "</ul>",
        "<div>",
        *charts(summary, over),
        "</div>",
        *_node_table(summary),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
