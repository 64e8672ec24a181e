"""The summary in words: ``snrun metrics`` without ``--json`` (a few lines per node).

Unknown figures print as "unknown" (or "-" in a table cell), never as 0.
"""

from __future__ import annotations

import time

from slurm_supernode.observe.summary import AttemptSummary, CommFigures, NodeSummary

UNKNOWN = "unknown"


def seconds(v: float | None, unknown: str = UNKNOWN) -> str:
    if v is None:
        return unknown
    if v >= 100:
        return f"{v:.0f} s"
    if v >= 1:
        return f"{v:.2f} s"
    return f"{v * 1000:.1f} ms"


def size(v: float | None, unknown: str = UNKNOWN) -> str:
    """Bytes in binary units (GiB, MiB ...)."""
    if v is None:
        return unknown
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(v) >= scale:
            return f"{v / scale:.1f} {unit}"
    return f"{v:.0f} B"


def pct(v: float | None, unknown: str = UNKNOWN) -> str:
    return unknown if v is None else f"{v:.0f}%"


def share(v: float | None, unknown: str = UNKNOWN) -> str:
    return unknown if v is None else f"{v * 100:.0f}%"


def si(v: float) -> str:
    """A count with an SI prefix: 1234567 -> "1.2M"."""
    for prefix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.1f}{prefix}"
    return f"{v:.1f}"


def rate(v: float | None, unit: str, unknown: str = UNKNOWN) -> str:
    """Per second: ``rate(2.5e6, "B")`` is "2.5MB/s", ``rate(900, " tokens")`` "900.0 tokens/s"."""
    return unknown if v is None else f"{si(v)}{unit}/s"


def comm_line(c: CommFigures | None) -> str:
    """ "communication 31% of a step, plan 18% (1.7x)" plus the groups' shares."""
    if c is None:
        return f"communication share {UNKNOWN} (no profiled window yet)"
    text = f"communication {share(c.share)} of a step (exposed; {share(c.overlapped_share)} "
    text += "overlapped)"
    if c.plan_share is not None:
        text += f", plan {share(c.plan_share)}"
        if c.plan_share > 0:
            text += f" ({c.share / c.plan_share:.1f}x the plan)"
    else:
        text += f", plan {UNKNOWN}"
    if c.by_group:
        text += "; " + ", ".join(f"{k} {share(v)}" for k, v in c.by_group.items())
    return text


def node_lines(n: NodeSummary) -> list[str]:
    head = f"{n.node}" + (f" ({n.supernode})" if n.supernode else "")
    if n.slow is not None:
        head += f"  SLOW x{n.slow.ratio:.2f}: {n.slow.evidence}"
    age = "never sampled" if n.age_s is None else f"sampled {n.age_s:.0f} s ago"
    out = [head + f"  [{age}{', STALE' if n.stale else ''}]"]
    mem = f"{size(n.mem_used_bytes)} / {size(n.mem_total_bytes)}"
    nics = ", ".join(
        f"{k} rx {rate(r.rx_bytes_per_s, 'B')} tx {rate(r.tx_bytes_per_s, 'B')}"
        for k, r in n.nics.items()
    )
    out.append(f"  cpu {pct(n.cpu_percent)}  mem {mem}  net {nics or UNKNOWN}")
    for d in n.devices:
        out.append(
            f"  dev{d.index}: util {pct(d.util_percent)}  mem {size(d.mem_used_bytes)} / "
            f"{size(d.mem_total_bytes)}  {_num(d.temperature_c, ' C')}  {_num(d.power_w, ' W')}"
            + (f"  ecc {d.ecc_errors}" if d.ecc_errors else "")
            + (f"  xid {d.xid}" if d.xid else "")
        )
    ranks = ", ".join(f"r{r.rank} {seconds(r.step_s)}@{r.last_step}" for r in n.ranks)
    out.append(f"  step {seconds(n.step_s)}" + (f" ({ranks})" if ranks else ""))
    if n.comm is not None:
        out.append("  " + comm_line(n.comm))
    out += [f"  ! {m}" for m in n.missing]
    return out


def _num(v: float | None, unit: str) -> str:
    return UNKNOWN + unit if v is None else f"{v:.0f}{unit}"


def format_summary(s: AttemptSummary) -> str:
    """The whole attempt: the job's figures, then each node's."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.t))
    lines = [
        f"job {s.job_id if s.job_id is not None else '?'} attempt {s.attempt} ({s.state or '?'}) "
        f"of {s.user}, {len(s.nodes)} nodes, at {when}",
        f"step {seconds(s.step_s)} (median of ranks), "
        f"at step {s.last_step if s.last_step is not None else UNKNOWN}, "
        f"throughput {_throughput(s)}, loss {UNKNOWN if s.loss is None else f'{s.loss:.4g}'}, "
        f"checkpoint {_ago(s.checkpoint_age_s)}",
        comm_line(s.comm),
    ]
    if s.comm is not None and s.comm.plan_share is not None and s.comm.plan_note:
        lines.append(f"plan: {s.comm.plan_note}")
    for mark in s.slow:
        where = f" ({mark.supernode})" if mark.supernode else ""
        lines.append(f"SLOW NODE {mark.node}{where}: x{mark.ratio:.2f}, {mark.evidence}")
    lines += [f"! {m}" for m in s.missing]
    for n in s.nodes:
        lines += node_lines(n)
    return "\n".join(lines)


def _throughput(s: AttemptSummary) -> str:
    if s.tokens_per_s is not None:
        return rate(s.tokens_per_s, " tokens")
    if s.samples_per_s is not None:
        return rate(s.samples_per_s, " samples")
    return UNKNOWN


def _ago(age: float | None) -> str:
    return f"age {UNKNOWN}" if age is None else f"{seconds(age)} ago"
