"""What a job is doing now, reduced from its observe records: the one model behind
``snrun metrics``, ``snrun top``, the HTML report and the Prometheus textfile.

Pure: records and the job's context in, a typed summary out (no file, clock or Slurm). A figure
nobody measured stays ``None`` and the reason goes into ``missing``: a view says "unknown",
never 0 (a script without an optimizer has no step time, not a step time of zero).
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from slurm_supernode.observe.records import (
    CommShare,
    DeviceSample,
    NodeSample,
    Record,
    SlowNodeMark,
    StepRecord,
)

DEFAULT_WINDOW = 20  # steps per rank whose median is "the" step time
STALE_PERIODS = 3  # a node whose newest sample is this many sampling periods old is stale
MIN_STALE_S = 30.0


@dataclass(frozen=True)
class AttemptRecords:
    """Everything one attempt wrote, grouped the way its files are."""

    samples: Mapping[str, Sequence[Record]] = field(default_factory=dict)  # node -> lines
    steps: Mapping[int, Sequence[StepRecord]] = field(default_factory=dict)  # rank -> lines
    slow: Sequence[SlowNodeMark] = ()
    comm: Mapping[int, Sequence[CommShare]] = field(default_factory=dict)  # rank -> windows


@dataclass(frozen=True)
class JobContext:
    """What the records do not say: which job, whose, which nodes, where each node sits."""

    job_id: int | None
    user: str
    attempt: int
    nodes: tuple[str, ...] = ()  # the attempt's allocation (the ledger's), in order
    supernode_of: Mapping[str, str] = field(default_factory=dict)
    checkpoint_t: float | None = None  # newest checkpoint file's time, if any
    job_dir: str = ""
    state: str = ""  # the chain's state as snrun status says it (RUNNING, COMPLETED, ...)


@dataclass(frozen=True)
class DeviceFigures:
    index: int
    t: float
    util_percent: float | None
    mem_used_bytes: int | None
    mem_total_bytes: int | None
    temperature_c: float | None
    power_w: float | None
    sm_clock_mhz: float | None
    ecc_errors: int | None
    xid: int | None


@dataclass(frozen=True)
class NicRate:
    """Bytes per second between a node's two newest samples (None: a counter went back)."""

    rx_bytes_per_s: float | None
    tx_bytes_per_s: float | None


@dataclass(frozen=True)
class RankStep:
    rank: int
    node: str
    last_step: int
    last_t: float
    step_s: float  # median of the last window
    window: int  # how many steps that median is of
    tokens_per_s: float | None
    samples_per_s: float | None
    loss: float | None


@dataclass(frozen=True)
class CommFigures:
    """A profiled window: the share of a step spent waiting on communication, and the plan's."""

    share: float  # exposed communication / (compute + exposed communication)
    overlapped_share: float  # overlapped communication over the same step time
    plan_share: float | None
    by_group: dict[str, float]  # group kind -> its seconds over the step time
    ranks: int  # how many ranks' windows this is the median of
    t: float
    # what the plan was computed with (model, measured or nominal links), or why there is none
    plan_note: str | None = None


@dataclass(frozen=True)
class NodeSummary:
    node: str
    supernode: str | None
    sampled_t: float | None  # newest sample of any kind
    age_s: float | None
    stale: bool
    cpu_percent: float | None
    mem_used_bytes: int | None
    mem_total_bytes: int | None
    disk_used_bytes: int | None
    disk_total_bytes: int | None
    nics: dict[str, NicRate]
    devices: list[DeviceFigures]
    ranks: list[RankStep]
    step_s: float | None  # median of its ranks' step times
    comm: CommFigures | None
    slow: SlowNodeMark | None  # the newest mark, if the judge named this node
    missing: list[str]


@dataclass(frozen=True)
class AttemptSummary:
    job_id: int | None
    user: str
    attempt: int
    state: str
    job_dir: str
    t: float  # when the summary was made
    nodes: list[NodeSummary]
    step_s: float | None  # median over all ranks
    last_step: int | None  # the lowest newest step of any rank: where the job has got to
    tokens_per_s: float | None  # summed over ranks (each rank's own tokens)
    samples_per_s: float | None
    loss: float | None  # the newest loss any rank reported
    checkpoint_age_s: float | None
    comm: CommFigures | None
    slow: list[SlowNodeMark]
    missing: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def node(self, name: str) -> NodeSummary | None:
        return next((n for n in self.nodes if n.node == name), None)


def _median(values: Iterable[float]) -> float | None:
    vals = list(values)
    return statistics.median(vals) if vals else None


def _sampling_period(times: Sequence[float]) -> float | None:
    deltas = [b - a for a, b in itertools.pairwise(times) if b > a]
    return _median(deltas)


def _nic_rates(prev: NodeSample, last: NodeSample) -> dict[str, NicRate]:
    dt = last.t - prev.t
    out = {}
    for nic in sorted(set(last.nic_rx_bytes) | set(last.nic_tx_bytes)):

        def rate(now: dict[str, int], before: dict[str, int], nic: str = nic) -> float | None:
            if dt <= 0 or nic not in now or nic not in before or now[nic] < before[nic]:
                return None
            return (now[nic] - before[nic]) / dt

        out[nic] = NicRate(
            rate(last.nic_rx_bytes, prev.nic_rx_bytes), rate(last.nic_tx_bytes, prev.nic_tx_bytes)
        )
    return out


def _devices(lines: Sequence[Record]) -> list[DeviceFigures]:
    newest: dict[int, DeviceSample] = {}
    for r in lines:
        if isinstance(r, DeviceSample) and (r.index not in newest or r.t >= newest[r.index].t):
            newest[r.index] = r
    return [
        DeviceFigures(
            d.index,
            d.t,
            d.util_percent,
            d.mem_used_bytes,
            d.mem_total_bytes,
            d.temperature_c,
            d.power_w,
            d.sm_clock_mhz,
            d.ecc_errors,
            d.xid,
        )
        for d in (newest[i] for i in sorted(newest))
    ]


def rank_step(rank: int, lines: Sequence[StepRecord], window: int) -> RankStep | None:
    """A rank's newest step and the median step time of its last ``window`` steps."""
    if not lines:
        return None
    ordered = sorted(lines, key=lambda s: (s.t, s.step))
    last = ordered[-1]
    recent = [s for s in ordered[-window:] if s.seconds > 0]
    seconds = sum(s.seconds for s in recent)

    def per_s(values: list[int | None]) -> float | None:
        if not recent or seconds <= 0 or any(v is None for v in values):
            return None
        return sum(v or 0 for v in values) / seconds

    loss = next((s.loss for s in reversed(ordered) if s.loss is not None), None)
    return RankStep(
        rank=rank,
        node=last.node,
        last_step=last.step,
        last_t=last.t,
        step_s=_median(s.seconds for s in recent) or 0.0,
        window=len(recent),
        tokens_per_s=per_s([s.tokens for s in recent]),
        samples_per_s=per_s([s.samples for s in recent]),
        loss=loss,
    )


def comm_figures(windows: Sequence[CommShare]) -> CommFigures | None:
    """The median over ranks of each rank's newest profiled window."""
    newest = [max(w, key=lambda c: c.t) for w in _group_by_rank(windows).values()]
    shares, overlapped, plans = [], [], []
    groups: dict[str, list[float]] = {}
    for c in newest:
        step = c.compute_s + c.exposed_comm_s
        if step <= 0:
            continue
        shares.append(c.exposed_comm_s / step)
        overlapped.append(c.overlapped_comm_s / step)
        if c.plan_share is not None:
            plans.append(c.plan_share)
        for kind, secs in c.by_group.items():
            groups.setdefault(kind, []).append(secs / step)
    if not shares:
        return None
    return CommFigures(
        share=statistics.median(shares),
        overlapped_share=statistics.median(overlapped),
        plan_share=_median(plans),
        by_group={k: statistics.median(v) for k, v in sorted(groups.items())},
        ranks=len(shares),
        t=max(c.t for c in newest),
        plan_note=max(newest, key=lambda c: c.t).plan_note,
    )


def _group_by_rank(windows: Sequence[CommShare]) -> dict[int, list[CommShare]]:
    out: dict[int, list[CommShare]] = {}
    for c in windows:
        out.setdefault(c.rank, []).append(c)
    return out


def _node_summary(
    node: str,
    lines: Sequence[Record],
    ranks: list[RankStep],
    comm: Sequence[CommShare],
    slow: SlowNodeMark | None,
    ctx: JobContext,
    now: float,
) -> NodeSummary:
    samples = sorted((r for r in lines if isinstance(r, NodeSample)), key=lambda s: s.t)
    devices = _devices(lines)
    times = [r.t for r in lines if isinstance(r, (NodeSample, DeviceSample))]
    sampled_t = max(times) if times else None
    period = _sampling_period([s.t for s in samples])
    age = now - sampled_t if sampled_t is not None else None
    # only a running attempt can go stale: an ended one's newest sample is simply its last
    running = ctx.state in ("", "RUNNING")
    limit = max(MIN_STALE_S, STALE_PERIODS * (period or 0.0))
    stale = running and age is not None and age > limit
    missing = []
    if sampled_t is None:
        missing.append("no samples from this node (its sampler has not written yet)")
    if stale:
        missing.append(f"newest sample {age:.0f} s old: the node's sampler stopped?")
    said = samples[-1].missing if samples else {}  # what the sampler says it cannot measure
    missing += [f"{what}: {why}" for what, why in sorted(said.items())]
    if samples and not devices and "devices" not in said:
        missing.append("no device figures (no NVML / npu-smi on this node)")
    last = samples[-1] if samples else None
    nics = _nic_rates(samples[-2], samples[-1]) if len(samples) >= 2 else {}
    if last is not None and len(samples) < 2 and (last.nic_rx_bytes or last.nic_tx_bytes):
        missing.append("NIC rates unknown until the second sample")
    step_s = _median(r.step_s for r in ranks if r.window)
    return NodeSummary(
        node=node,
        supernode=ctx.supernode_of.get(node) or (slow.supernode if slow else None),
        sampled_t=sampled_t,
        age_s=age,
        stale=stale,
        cpu_percent=last.cpu_percent if last else None,
        mem_used_bytes=last.mem_used_bytes if last else None,
        mem_total_bytes=last.mem_total_bytes if last else None,
        disk_used_bytes=last.disk_used_bytes if last else None,
        disk_total_bytes=last.disk_total_bytes if last else None,
        nics=nics,
        devices=devices,
        ranks=ranks,
        step_s=step_s,
        comm=comm_figures(comm),
        slow=slow,
        missing=missing,
    )


def summarize(
    records: AttemptRecords, ctx: JobContext, now: float, window: int = DEFAULT_WINDOW
) -> AttemptSummary:
    """The attempt as one summary: per node the newest figures, then the job's."""
    ranks = [
        rs for rank in sorted(records.steps) if (rs := rank_step(rank, records.steps[rank], window))
    ]
    newest_slow: dict[str, SlowNodeMark] = {}
    for mark in sorted(records.slow, key=lambda m: m.t):
        newest_slow[mark.node] = mark
    comm_by_node: dict[str, list[CommShare]] = {}
    all_comm = [c for lines in records.comm.values() for c in lines]
    for c in all_comm:
        comm_by_node.setdefault(c.node, []).append(c)
    names = list(ctx.nodes)
    for extra in (*records.samples, *(r.node for r in ranks), *newest_slow, *comm_by_node):
        if extra not in names:
            names.append(extra)
    nodes = [
        _node_summary(
            n,
            records.samples.get(n, ()),
            [r for r in ranks if r.node == n],
            comm_by_node.get(n, ()),
            newest_slow.get(n),
            ctx,
            now,
        )
        for n in names
    ]
    return AttemptSummary(
        job_id=ctx.job_id,
        user=ctx.user,
        attempt=ctx.attempt,
        state=ctx.state,
        job_dir=ctx.job_dir,
        t=now,
        nodes=nodes,
        step_s=_median(r.step_s for r in ranks if r.window),
        last_step=min((r.last_step for r in ranks), default=None),
        tokens_per_s=_job_rate([r.tokens_per_s for r in ranks]),
        samples_per_s=_job_rate([r.samples_per_s for r in ranks]),
        loss=next(
            (r.loss for r in sorted(ranks, key=lambda r: -r.last_t) if r.loss is not None), None
        ),
        checkpoint_age_s=_checkpoint_age(records, ctx, now),
        comm=comm_figures(all_comm),
        slow=sorted(newest_slow.values(), key=lambda m: -m.ratio),
        missing=_job_missing(records, ranks, ctx),
    )


def _checkpoint_age(records: AttemptRecords, ctx: JobContext, now: float) -> float | None:
    """From the newest checkpoint the ranks saw (their step records carry it) or found in the
    job's checkpoint folder, whichever is newer."""
    times = [s.checkpoint_t for lines in records.steps.values() for s in lines]
    known = [t for t in (*times, ctx.checkpoint_t) if t is not None]
    return now - max(known) if known else None


def _job_rate(per_rank: list[float | None]) -> float | None:
    """The job's rate: every rank's summed; unknown when any rank's is."""
    if not per_rank or any(v is None for v in per_rank):
        return None
    return sum(v or 0.0 for v in per_rank)


def _job_missing(records: AttemptRecords, ranks: list[RankStep], ctx: JobContext) -> list[str]:
    out = []
    if not ranks:
        out.append(
            "progress unknown: no optimizer step recorded (the script uses no torch optimizer, "
            "or has not stepped yet)"
        )
    elif all(r.tokens_per_s is None and r.samples_per_s is None for r in ranks):
        out.append("throughput unknown: the job does not say how many tokens or samples a step is")
    if not any(records.comm.values()):
        out.append("communication share unknown: no profiled window yet")
    else:
        out += _plan_missing(comm_figures([c for w in records.comm.values() for c in w]))
    if ctx.checkpoint_t is None and not any(
        s.checkpoint_t is not None for lines in records.steps.values() for s in lines
    ):
        out.append("checkpoint age unknown: no checkpoint written")
    return out


def _plan_missing(comm: CommFigures | None) -> list[str]:
    """Why the plan's share stands empty beside a measured one (the newest window's note)."""
    if comm is None or comm.plan_share is not None:
        return []
    why = comm.plan_note or "the ranks' records say no reason (an older snrun wrote them)"
    return [f"plan share unknown: {why}"]
