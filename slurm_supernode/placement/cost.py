"""Communication cost of one training step: bytes per parallel dimension, priced per link level.

"Count your communication before you buy a super node." For each dimension the bytes one
device sends per step are counted from the model shape (the arithmetic of field-facts.md),
assigned to the *slowest* link level any of its groups spans in the rank map (node, super
node, inter), and priced as bytes / bandwidth + collective steps x latency. No overlap with
compute is assumed (an upper bound), so communication share = comm / (compute + comm).

Per device and step, with M micro-batches, Ls = layers / pp layers per stage, s' = seq / cp,
a = micro_batch x s' x hidden x dtype_bytes (one activation tensor):
  tp  M x Ls x 2a                                  (all-reduces, 2(tp-1) steps each, 4/layer)
  cp  M x Ls x 4a x cp x (cp-1)/cp                 (K,V all-gather fwd + reduce-scatter bwd)
  ep  M x Ls x 4a x topk x (ep-1)/ep               (dispatch+combine all-to-all, fwd+bwd)
  dp  dense/(tp x pp) x dtype_bytes x 2(n-1)/n     (gradient all-reduce over dp x cp = n)
  edp expert/(etp x ep x pp) x dtype_bytes x 2(n-1)/n  (expert gradients over edp = n)
  pp  M x 2a                                       (activation fwd + gradient bwd per boundary)
The groups are the framework's (``layout.py``): dense gradients are reduced over Megatron's
data-parallel group with context parallelism (dp x cp ranks), expert gradients over the
expert data-parallel group (edp = W / (etp x ep x pp)), tokens are exchanged in the EP groups.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from slurm_supernode.errors import InputError
from slurm_supernode.placement.checks import slowest_level, span_counts
from slurm_supernode.placement.model import Layout, RankMap
from slurm_supernode.placement.models import ModelSpec
from slurm_supernode.site.model import LinkLevel, Site

GB = 1e9
# Priced dimension -> the framework group whose links it uses ("dp": dense gradients travel in
# Megatron's DATA_PARALLEL_GROUP_WITH_CP, torchtitan's dp_shard_cp x dp_replicate).
COST_GROUPS = {"tp": "tp", "cp": "cp", "ep": "ep", "dp": "dp-cp", "edp": "edp", "pp": "pp"}
# weights (2) + gradients (2) + fp32 master, Adam m and v (12) bytes per parameter
STATE_BYTES_PER_PARAM = 16


@dataclass(frozen=True, slots=True)
class Workload:
    """A model plus how much work a step does and how fast the devices compute it."""

    model: ModelSpec
    global_batch: int | None = None  # sequences per step; None: one per device
    compute_time_s: float | None = None  # measured/given compute time of one step
    tflops: float | None = None  # peak dense TFLOP/s per device (when compute is derived)
    mfu: float = 0.4

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
class DimCost:
    dim: str
    size: int  # ranks in one group of ``group`` (dp: dp x cp)
    level: str | None  # slowest link level its groups span; None: no communication
    bytes: float  # per device per step
    collectives: int  # per device per step
    bandwidth_gbps: float
    latency_s: float
    time_s: float

    def as_dict(self) -> dict:
        return {
            "dim": self.dim,
            "group": COST_GROUPS[self.dim],
            "size": self.size,
            "level": self.level,
            "bytes": self.bytes,
            "collectives": self.collectives,
            "bandwidth_gbps": self.bandwidth_gbps,
            "latency_s": self.latency_s,
            "time_s": self.time_s,
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

    def as_dict(self) -> dict:
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


def param_split(model: ModelSpec) -> tuple[float, float]:
    """(dense, expert) parameters: expert weights are sharded and reduced on the expert grid.

    A MoE layer holds ``experts`` copies of the expert weights w and a token uses ``topk``:
    params = dense + experts*w, active = dense + topk*w. Without --active-params every
    parameter of a MoE model is counted as expert weight (an upper bound on the edp traffic).
    """
    if not model.is_moe:
        return model.params, 0.0
    if model.active_params is None or model.experts <= model.topk:
        return 0.0, model.params
    per_expert = (model.params - model.active_params) / (model.experts - model.topk)
    expert = min(model.params, max(0.0, per_expert * model.experts))
    return model.params - expert, expert


def group_size(lay: Layout, dim: str) -> int:
    """Ranks in one group of a priced dimension."""
    size = 1
    for name in COST_GROUPS[dim].split("-"):
        size *= lay.size(name)
    return size


def _volumes(
    model: ModelSpec, lay: Layout, micro_batches: int
) -> dict[str, tuple[float, int, int]]:
    """(bytes, collectives, latency steps per collective) per dimension for one device."""
    m = micro_batches
    stage_layers = model.layers / lay.pp
    act = model.micro_batch * (model.seq / lay.cp) * model.hidden * model.dtype_bytes
    out: dict[str, tuple[float, int, int]] = {}
    tp, cp, ep = lay.tp, lay.cp, lay.ep
    out["tp"] = (m * stage_layers * 2 * act, int(m * stage_layers * 4), 2 * (tp - 1))
    out["cp"] = (m * stage_layers * 4 * act * (cp - 1), int(m * stage_layers * 2), cp - 1)
    ep_bytes = m * stage_layers * 4 * act * model.topk * (ep - 1) / ep if model.is_moe else 0.0
    out["ep"] = (ep_bytes, int(m * stage_layers * 4) if model.is_moe else 0, ep - 1)
    dense, expert = param_split(model)
    n = group_size(lay, "dp")
    grads = dense / (lay.tp * lay.pp) * model.dtype_bytes
    out["dp"] = (grads * 2 * (n - 1) / n, 1 if dense else 0, 2 * (n - 1))
    n = lay.edp
    egrads = expert / (lay.expert_tp * lay.ep * lay.pp) * model.dtype_bytes
    out["edp"] = (egrads * 2 * (n - 1) / n, 1 if expert else 0, 2 * (n - 1))
    out["pp"] = (m * 2 * act, 2 * m, 1)
    return {d: v if group_size(lay, d) > 1 else (0.0, 0, 0) for d, v in out.items()}


def _link(site: Site, level: str) -> LinkLevel:
    try:
        return site.links[level]
    except KeyError:
        raise InputError(
            f"site {site.name!r} has no link level {level!r}",
            where="links",
            hint="describe links: node, supernode, inter (bandwidth_gbps, latency_us)",
        ) from None


def micro_batches_of(model: ModelSpec, lay: Layout, global_batch: int | None) -> tuple[int, int]:
    """(micro-batches per pipeline, effective global batch) for a layout.

    Data replicas are the framework's dp = W / (tp x cp x pp): EP ranks are carved out of
    them and see different tokens.
    """
    replicas = lay.dp
    gb = global_batch if global_batch is not None else lay.world_size * model.micro_batch
    m = max(1, -(-gb // (replicas * model.micro_batch)))
    return m, m * replicas * model.micro_batch


def step_cost(site: Site, lay: Layout, levels: dict[str, str | None], work: Workload) -> StepCost:
    """Price one step of ``lay`` given the slowest link level of each dimension."""
    model = work.model
    m, gb = micro_batches_of(model, lay, work.global_batch)
    vols = _volumes(model, lay, m)
    dims = []
    for dim in COST_GROUPS:
        nbytes, colls, steps = vols[dim]
        size = group_size(lay, dim)
        level = levels.get(dim) if size > 1 else None
        if level is None or (nbytes == 0 and colls == 0):
            dims.append(DimCost(dim, size, None, 0.0, 0, 0.0, 0.0, 0.0))
            continue
        link = _link(site, level)
        latency = colls * steps * link.latency_us * 1e-6
        time = nbytes / (link.bandwidth_gbps * GB) + latency
        dims.append(DimCost(dim, size, level, nbytes, colls, link.bandwidth_gbps, latency, time))
    if work.compute_time_s is not None:
        compute, bubble = work.compute_time_s, 0.0  # a measured step already has its bubble
    else:
        tokens = gb * model.seq
        flops = 6 * model.flops_params * tokens / lay.world_size
        compute = flops / (work.tflops * 1e12 * work.mfu)
        bubble = compute * (lay.pp - 1) / m
    dense, expert = param_split(model)
    per_device = dense / (lay.tp * lay.pp) + expert / (lay.expert_tp * lay.ep * lay.pp)
    memory = per_device * STATE_BYTES_PER_PARAM / GB
    return StepCost(lay, tuple(dims), m, gb, compute, bubble, memory)


def levels_for(
    lay: Layout, nproc: int, sn_of: list[str], spans: dict[str, Counter[str]] | None = None
) -> dict[str, str | None]:
    """Slowest link level of each priced dimension's framework groups, from the node order."""
    out: dict[str, str | None] = {}
    for dim, group in COST_GROUPS.items():
        found = spans.get(group) if spans is not None else None
        if found is None:
            found = span_counts(lay, nproc, sn_of, group, stop_at_inter=True)
        out[dim] = slowest_level(found)
    return out


def levels_of(rm: RankMap, spans: dict[str, Counter[str]] | None = None) -> dict[str, str | None]:
    """Slowest link level per priced dimension of a built rank map."""
    sn_of = [n.supernode for n in rm.nodes]
    return levels_for(rm.layout, rm.nproc_per_node, sn_of, spans)


def plan_cost(site: Site, rm: RankMap, work: Workload, baseline: RankMap | None = None) -> dict:
    """The ``cost`` object of the plan JSON: this map, and the plain-order baseline if given."""
    mine = step_cost(site, rm.layout, levels_of(rm), work)
    out = {
        "model": work.model.as_dict(),
        "compute_source": "given" if work.compute_time_s is not None else "tflops",
        "tflops": work.tflops,
        "mfu": work.mfu if work.compute_time_s is None else None,
        "plan": mine.as_dict(),
        "baseline": None,
        "speedup": None,
    }
    if baseline is not None:
        base = step_cost(site, baseline.layout, levels_of(baseline), work)
        out["baseline"] = {"name": "slurm hostname order"} | base.as_dict()
        out["speedup"] = base.step_s / mine.step_s if mine.step_s else None
    return out
