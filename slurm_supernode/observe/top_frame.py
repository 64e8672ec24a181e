"""One frame of ``snrun top``: the job's line, then a row per node (devices, step time,
communication share, slow mark) and its devices' utilization. Pure text; colour (ANSI) only
when asked, so ``--once`` output and tests read plain."""

from __future__ import annotations

import time

from slurm_supernode.observe.metrics_text import UNKNOWN, comm_line, pct, seconds, share, size
from slurm_supernode.observe.summary import AttemptSummary, NodeSummary

RED, YELLOW, BOLD, RESET = "\x1b[31m", "\x1b[33m", "\x1b[1m", "\x1b[0m"
_HEAD = (
    f"{'NODE':<14} {'SUPERNODE':<10} {'AGE':>5} {'CPU':>4} {'MEM':>9} {'DEV':>3} {'UTIL':>4} "
    f"{'DMEM':>9} {'TEMP':>5} {'POWER':>7} {'STEP':>9} {'COMM':>5} {'PLAN':>5}  SLOW"
)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def node_row(n: NodeSummary) -> str:
    devs = n.devices
    util = _mean([d.util_percent for d in devs if d.util_percent is not None])
    dmem = [d.mem_used_bytes for d in devs if d.mem_used_bytes is not None]
    temps = [d.temperature_c for d in devs if d.temperature_c is not None]
    power = [d.power_w for d in devs if d.power_w is not None]
    age = "-" if n.age_s is None else f"{n.age_s:.0f}s"
    slow = f"x{n.slow.ratio:.2f} {n.slow.evidence}" if n.slow else ""
    plan = n.comm.plan_share if n.comm else None
    return (
        f"{n.node[:14]:<14} {(n.supernode or '-')[:10]:<10} {age:>5} "
        f"{pct(n.cpu_percent, '-'):>4} {size(n.mem_used_bytes, '-'):>9} {len(devs):>3} "
        f"{pct(util, '-'):>4} {size(sum(dmem) if dmem else None, '-'):>9} "
        f"{(f'{max(temps):.0f}C' if temps else '-'):>5} "
        f"{(f'{sum(power):.0f}W' if power else '-'):>7} {seconds(n.step_s, '-'):>9} "
        f"{share(n.comm.share if n.comm else None, '-'):>5} {share(plan, '-'):>5}  {slow}"
    )


def device_row(n: NodeSummary) -> str | None:
    """The node's devices' utilization, one figure each ("util 97 98 12 99")."""
    if not n.devices:
        return None
    figs = " ".join("-" if d.util_percent is None else f"{d.util_percent:.0f}" for d in n.devices)
    return f"{'':<14} util% {figs}"


def frame(s: AttemptSummary, width: int = 132, color: bool = False) -> list[str]:
    """The lines of one frame, each cut to ``width``."""
    when = time.strftime("%H:%M:%S", time.localtime(s.t))
    step = seconds(s.step_s)
    at = s.last_step if s.last_step is not None else UNKNOWN
    lines = [
        f"snrun top  job {s.job_id if s.job_id is not None else '?'} attempt {s.attempt} "
        f"{s.state}  {s.user}  {len(s.nodes)} nodes  {when}",
        f"step {step} at step {at}  {comm_line(s.comm)}",
    ]
    lines += [f"! {m}" for m in s.missing]
    for mark in s.slow:
        lines.append(_paint(f"SLOW {mark.node}: x{mark.ratio:.2f} {mark.evidence}", RED, color))
    lines.append(_paint(_HEAD, BOLD, color))
    for n in s.nodes:
        row = node_row(n)
        lines.append(_paint(row, RED, color) if n.slow else _paint(row, YELLOW, color and n.stale))
        if (dev := device_row(n)) is not None:
            lines.append(dev)
    return [_cut(line, width) for line in lines]


def _paint(text: str, code: str, on: bool) -> str:
    return f"{code}{text}{RESET}" if on else text


def _cut(line: str, width: int) -> str:
    if RESET in line:  # painted: cut the text inside the codes
        start = line.index("m") + 1
        body = line[start : -len(RESET)]
        return line[:start] + body[:width] + RESET
    return line[:width]
