"""Communication cost of one training step: the collectives each dimension runs, priced per link.

"Count your communication before you buy a super node." For each parallel dimension the
collectives one device takes part in per step are listed from the model shape (derived in
docs/planner.md: Megatron's TP all-reduces, ring attention for CP, MoE all-to-all, the
distributed optimizer's reduce-scatter + all-gather, pipeline sends), each priced on the slowest
link level its groups span (node, cross_island, supernode, inter) with the ring model:
  time = bytes_sent / bandwidth + latency_steps x latency
  all_reduce of S bytes on n ranks: 2(n-1)/n x S sent, 2(n-1) steps
  all_gather / reduce_scatter / all_to_all: (n-1)/n x S, n-1 steps; send/recv: S, 1 step
The site's ``bandwidth_GBps`` is therefore the bus bandwidth (nccl-tests' busbw) of that level.
No overlap with compute is assumed (an upper bound): share = comm / (compute + bubble + comm).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from slurm_supernode.errors import InputError
from slurm_supernode.placement.checks import slowest_level, span_counts
from slurm_supernode.placement.layout import all_strides
from slurm_supernode.placement.llm_presets import ModelSpec
from slurm_supernode.placement.model import DIMENSIONS, GROUP_DIMS, Layout, RankMap
from slurm_supernode.site.model import CROSS_ISLAND, LinkLevel, Site

GB = 1e9
# weights (2) + gradients (2) + fp32 master, Adam m and v (12) bytes per parameter
STATE_BYTES_PER_PARAM = 16
# link levels from fastest to slowest, with the optional island level inside a node
LEVEL_ORDER = ("node", CROSS_ISLAND, "supernode", "inter")

# a node's (visible devices, device groups): what decides whether an in-node group crosses islands
NodeDevices = tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]

# kind -> (bytes one rank sends per byte of buffer, latency steps), ring algorithms (nccl-tests'
# busbw factors: a link running at its bus bandwidth moves a collective in size x factor / bw)
COLLECTIVES: dict[str, tuple[Callable[[int], float], Callable[[int], float]]] = {
    "all_reduce": (lambda n: 2 * (n - 1) / n, lambda n: 2 * (n - 1)),
    "reduce_scatter": (lambda n: (n - 1) / n, lambda n: n - 1),
    "all_gather": (lambda n: (n - 1) / n, lambda n: n - 1),
    "all_to_all": (lambda n: (n - 1) / n, lambda n: n - 1),
    "send_recv": (lambda n: 1.0, lambda n: 1),
}


@dataclass(frozen=True, slots=True)
class Workload:
    """A model plus how much work a step does and how fast the devices compute it."""

    model: ModelSpec
    global_batch: int | None = None  # sequences per step; None: one per device
    compute_time_s: float | None = None  # measured/given compute time of one step
    tflops: float | None = None  # peak dense TFLOP/s per device (when compute is derived)
    mfu: float = 0.4
    # Megatron --sequence-parallel: TP all-reduces become all-gather + reduce-scatter (same
    # bytes, twice the collectives) and pipeline sends carry 1/tp of the activation.
    sequence_parallel: bool = False

    def __post_init__(self) -> None:
        if self.compute_time_s is None and self.tflops is None:
            raise InputError(
                "the cost model needs the compute time of a step",
                where="--compute-time",
                hint="give --compute-time SECONDS, or --tflops PEAK (and --mfu)",
            )
        if self.compute_time_s is not None and self.compute_time_s < 0:
            raise InputError("compute time must be >= 0", where="--compute-time")
        if self.tflops is not None and self.tflops <= 0:
            raise InputError("tflops must be positive", where="--tflops")
        if not 0 < self.mfu <= 1:
            raise InputError(f"mfu={self.mfu} must be in (0, 1]", where="--mfu")
        if self.global_batch is not None and self.global_batch < 1:
            raise InputError("global batch must be >= 1", where="--global-batch")


@dataclass(frozen=True, slots=True)
class Op:
    """One kind of collective a device runs: ``count`` times per step on ``n`` ranks.

    ``size`` is the buffer in nccl-tests' sense (all_reduce: the tensor; all_gather: the
    gathered output; reduce_scatter: the input; all_to_all: what one rank holds; send_recv:
    the message). ``group`` names the dimensions whose groups it runs on.
    """

    kind: str
    size: float
    count: float
    n: int
    group: tuple[str, ...]
    what: str

    @property
    def bytes(self) -> float:
        """Bytes one rank sends per step."""
        return self.count * COLLECTIVES[self.kind][0](self.n) * self.size

    @property
    def steps(self) -> float:
        return self.count * COLLECTIVES[self.kind][1](self.n)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "what": self.what,
            "size": self.size,
            "count": self.count,
            "n": self.n,
        }


def collective_time(link: LinkLevel, kind: str, size: float, n: int) -> float:
    """Modelled seconds of one collective of ``size`` bytes on ``n`` ranks over ``link``."""
    factor, steps = COLLECTIVES[kind]
    return factor(n) * size / (link.bandwidth_GBps * GB) + steps(n) * link.latency_us * 1e-6


@dataclass(frozen=True, slots=True)
class DimCost:
    dim: str
    size: int
    level: str | None  # slowest link level its groups span; None: no communication
    bytes: float  # per device per step
    collectives: int  # per device per step
    bandwidth_GBps: float
    latency_s: float
    time_s: float
    ops: tuple[Op, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "dim": self.dim,
            "size": self.size,
            "level": self.level,
            "bytes": self.bytes,
            "collectives": self.collectives,
            "bandwidth_GBps": self.bandwidth_GBps,
            "latency_s": self.latency_s,
            "time_s": self.time_s,
            "ops": [o.as_dict() for o in self.ops],
        }


@dataclass(frozen=True, slots=True)
class StepCost:
    layout: Layout
    dims: tuple[DimCost, ...]
    micro_batches: int
    global_batch: int
    compute_s: float
    bubble_s: float
    memory_gb: float  # weights + gradients + optimizer state per device (no activations)

    @property
    def comm_s(self) -> float:
        return sum(d.time_s for d in self.dims)

    @property
    def step_s(self) -> float:
        return self.compute_s + self.bubble_s + self.comm_s

    @property
    def comm_share(self) -> float:
        return self.comm_s / self.step_s if self.step_s else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "layout": self.layout.as_dict(),
            "micro_batches": self.micro_batches,
            "global_batch": self.global_batch,
            "compute_s": self.compute_s,
            "bubble_s": self.bubble_s,
            "comm_s": self.comm_s,
            "step_s": self.step_s,
            "comm_share": self.comm_share,
            "memory_gb": self.memory_gb,
            "dims": [d.as_dict() for d in self.dims],
        }


def sequence_parallel(model: ModelSpec, lay: Layout, work: Workload) -> bool:
    """SP as Megatron runs it: asked for, or forced (MoE with tp > 1 requires it)."""
    return lay.tp > 1 and (work.sequence_parallel or model.is_moe)


def traffic(model: ModelSpec, lay: Layout, m: int, sp: bool = False) -> dict[str, list[Op]]:
    """The collectives of one device per step, per dimension (docs/planner.md derives each).

    m micro-batches per pipeline, Ls = layers / pp per stage, a = b x (s/cp) x h x bytes the
    activation of one micro-batch on one rank.
    """
    tp, cp, ep, dp, pp, etp = lay.tp, lay.cp, lay.ep, lay.dp, lay.pp, lay.expert_tp
    nbytes = model.dtype_bytes
    ls = model.layers / pp
    tokens = model.micro_batch * model.seq / cp  # tokens of one micro-batch on one CP rank
    act = tokens * model.hidden * nbytes
    out: dict[str, list[Op]] = {d: [] for d in DIMENSIONS}
    if tp > 1:  # 2 all-reduces forward (attention out, MLP out) + 2 backward per layer
        if sp:
            out["tp"] += [
                Op("all_gather", act, 4 * m * ls, tp, ("tp",), "sequence-parallel all-gather"),
                Op("reduce_scatter", act, 4 * m * ls, tp, ("tp",), "sequence-parallel RS"),
            ]
        else:
            out["tp"].append(Op("all_reduce", act, 4 * m * ls, tp, ("tp",), "layer all-reduce"))
    if cp > 1:  # ring attention: K,V passed forward; K,V and dK,dV backward (3 ring passes)
        kv = 2 * tokens * model.kv_width / tp * nbytes  # this rank's K and V (heads split by tp)
        out["cp"].append(Op("all_gather", cp * kv, 3 * m * ls, cp, ("cp",), "ring K,V passes"))
    if ep > 1 and model.is_moe:  # dispatch + combine forward, and their gradients backward
        routed = tokens / tp * model.topk * model.hidden * nbytes  # SP: tokens split over tp
        out["ep"].append(Op("all_to_all", routed, 4 * m * ls, ep, ("ep",), "token all-to-all"))
    # gradients: distributed optimizer = reduce-scatter grads + all-gather params, once a step,
    # in the framework's groups (layout.py): dense weights are replicated over Megatron's
    # data-parallel group with context parallelism (dp x cp ranks; dp already holds the EP
    # ranks), expert weights over the expert data-parallel group (edp = W / (etp x ep x pp)).
    dense_n, expert_n = dp * cp, lay.edp
    dense = model.dense_params / (tp * pp) * nbytes
    experts = model.expert_params / (ep * etp * pp) * nbytes
    for size, n, group, what in (
        (dense, dense_n, ("dp", "cp"), "dense gradients"),
        (experts, expert_n, ("edp",), "expert gradients"),
    ):
        if n > 1 and size > 0:
            out["dp"] += [
                Op("reduce_scatter", size, 1, n, group, what + " reduce-scatter"),
                Op("all_gather", size, 1, n, group, what.replace("gradients", "params")),
            ]
    if pp > 1:  # activation forward, its gradient backward, per micro-batch and boundary
        msg = act / tp if sp else act
        sends = 2 * m if pp > 2 else m  # middle stages send both ways; pp=2 one way each
        out["pp"].append(Op("send_recv", msg, sends, 2, ("pp",), "stage activations"))
    return out


def _link(site: Site, level: str) -> LinkLevel:
    if level == CROSS_ISLAND and CROSS_ISLAND not in site.links:
        level = "supernode"  # islands of one node joined like the super node (documented)
    try:
        return site.links[level]
    except KeyError:
        raise InputError(
            f"site {site.name!r} has no link level {level!r}",
            where="links",
            hint="describe links: node, supernode, inter (bandwidth_GBps, latency_us)",
        ) from None


def micro_batches_of(model: ModelSpec, lay: Layout, global_batch: int | None) -> tuple[int, int]:
    """(micro-batches per pipeline, effective global batch) for a layout.

    Data replicas are the framework's dp = W / (tp x cp x pp): the EP ranks are carved out of
    them and see different tokens.
    """
    replicas = lay.dp
    gb = global_batch if global_batch is not None else lay.world_size * model.micro_batch
    m = max(1, -(-gb // (replicas * model.micro_batch)))
    return m, m * replicas * model.micro_batch


def _slowest(levels: Sequence[str | None]) -> str | None:
    known = [lv for lv in levels if lv is not None]
    return max(known, key=LEVEL_ORDER.index) if known else None


def step_cost(site: Site, lay: Layout, levels: dict[str, str | None], work: Workload) -> StepCost:
    """Price one step of ``lay`` given the slowest link level of each dimension."""
    model = work.model
    m, gb = micro_batches_of(model, lay, work.global_batch)
    ops = traffic(model, lay, m, sequence_parallel(model, lay, work))
    dims = []
    for dim in DIMENSIONS:
        nbytes = time = latency = 0.0
        colls = 0.0
        used: list[str] = []
        for op in ops[dim]:
            level = _slowest([levels.get(d) for d in op.group if lay.size(d) > 1])
            if level is None:
                continue
            link = _link(site, level)
            used.append(level)
            lat = op.steps * link.latency_us * 1e-6
            nbytes += op.bytes
            colls += op.count
            latency += lat
            time += op.bytes / (link.bandwidth_GBps * GB) + lat
        level = _slowest(used)
        bw = _link(site, level).bandwidth_GBps if level else 0.0
        kept = tuple(ops[dim]) if level else ()
        dims.append(
            DimCost(dim, lay.size(dim), level, nbytes, math.ceil(colls), bw, latency, time, kept)
        )
    if work.compute_time_s is not None:
        compute, bubble = work.compute_time_s, 0.0  # a measured step already has its bubble
    else:
        assert work.tflops is not None  # Workload: a compute time or the tflops
        tokens = gb * model.seq
        flops = 6 * model.flops_params * tokens / lay.world_size
        compute = flops / (work.tflops * 1e12 * work.mfu)
        bubble = compute * (lay.pp - 1) / m
    # dense weights split over tp x pp; experts over etp x ep x pp (each rank its experts only)
    shard = model.dense_params / (lay.tp * lay.pp) + model.expert_params / (
        lay.expert_tp * lay.pp * lay.ep
    )
    memory = shard * STATE_BYTES_PER_PARAM / GB
    return StepCost(lay, tuple(dims), m, gb, compute, bubble, memory)


def island_crossing(layout: Layout, dim: str, nproc: int, nodes: set[NodeDevices]) -> bool:
    """Whether a group of ``dim`` that stays inside one node spans two device islands.

    ``nodes``: distinct (visible devices, device_groups) of the allocation. Ranks fill every
    node the same way, so the first lcm(nproc, stride x size) ranks show every in-node pattern.
    """
    size = layout.size(dim)
    stride = all_strides(layout)[dim]
    if size == 1 or stride * (size - 1) >= nproc:
        return False
    span = math.lcm(nproc, stride * size)
    for visible, groups in nodes:
        island = {d: i for i, g in enumerate(groups) for d in g}
        for base in range(span):
            if (base // stride) % size:
                continue
            first, last = base, base + (size - 1) * stride
            if first // nproc != last // nproc:
                continue
            ids = {island[visible[(first + k * stride) % nproc]] for k in range(size)}
            if len(ids) > 1:
                return True
    return False


def refine_levels(
    levels: dict[str, str | None],
    layout: Layout,
    nproc: int,
    nodes: set[NodeDevices],
) -> dict[str, str | None]:
    """'node' becomes 'cross_island' for a dimension whose in-node groups cross islands."""
    return {
        d: CROSS_ISLAND if lv == "node" and island_crossing(layout, d, nproc, nodes) else lv
        for d, lv in levels.items()
    }


def levels_for(
    lay: Layout, nproc: int, sn_of: list[str], spans: dict[str, Counter[str]] | None = None
) -> dict[str, str | None]:
    """Slowest link level of every group dimension (tp, cp, dp, pp, ep, etp, edp).

    A combined group (dp x cp) is connected through its dp and cp groups, so it crosses a
    node or super node exactly when one of them does: the slowest of their levels.
    """
    out: dict[str, str | None] = {}
    for d in GROUP_DIMS:
        found = spans.get(d) if spans is not None else None
        if found is None:
            found = span_counts(lay, nproc, sn_of, d, stop_at_inter=True)
        out[d] = slowest_level(found)
    return out


def levels_of(
    rm: RankMap, spans: dict[str, Counter[str]] | None = None, site: Site | None = None
) -> dict[str, str | None]:
    """Slowest link level per group dimension of a built map (islands priced when site given)."""
    sn_of = [n.supernode for n in rm.nodes]
    levels = levels_for(rm.layout, rm.nproc_per_node, sn_of, spans)
    if site is None:
        return levels
    specs = {(n.visible_devices, site.node(n.hostname).spec.device_groups) for n in rm.nodes}
    return refine_levels(levels, rm.layout, rm.nproc_per_node, specs)


def plan_cost(
    site: Site, rm: RankMap, work: Workload, baseline: RankMap | None = None
) -> dict[str, Any]:
    """The ``cost`` object of the plan JSON: this map, and the plain-order baseline if given."""
    mine = step_cost(site, rm.layout, levels_of(rm, site=site), work)
    out = {
        "model": work.model.as_dict(),
        "compute_source": "given" if work.compute_time_s is not None else "tflops",
        "tflops": work.tflops,
        "mfu": work.mfu if work.compute_time_s is None else None,
        "sequence_parallel": sequence_parallel(work.model, rm.layout, work),
        "plan": mine.as_dict(),
        "baseline": None,
        "speedup": None,
    }
    if baseline is not None:
        base = step_cost(site, baseline.layout, levels_of(baseline, site=site), work)
        out["baseline"] = {"name": "slurm hostname order"} | base.as_dict()
        out["speedup"] = base.step_s / mine.step_s if mine.step_s else None
    return out
