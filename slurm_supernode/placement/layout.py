"""The frameworks' rank grids: which ranks form each communication group, and which layouts run.

Why: the training framework, not snrun, forms the groups, from rank numbers alone. snrun only
decides which device runs which rank, so it must know the framework's groups exactly.

Megatron-Core (``parallel_state.initialize_model_parallel``) builds two ``RankGenerator`` grids
over the same W ranks, both from one ``order`` string (innermost first; the first token varies
fastest with rank):
  dense  tp, cp, dp, pp     with dp  = W / (tp*cp*pp)     (``ep`` has size 1 here)
  expert etp, ep, edp, pp   with edp = W / (etp*ep*pp)    (``cp`` has size 1; tp -> etp, dp -> edp)
Megatron-LM passes ``tp-cp-ep-dp-pp``, or ``tp-cp-ep-pp-dp`` with ``--use-tp-pp-dp-mapping``.
A group of some dimensions = the ranks whose other coordinates are equal; members are listed
with the first dimension of the grid varying fastest, groups by their first rank.

torchtitan (``ParallelDims``, torchtitan/distributed/parallel_dims.py; the commit followed is
named in docs/plan-schema.md) unflattens the world into row-major meshes, outermost first:
  dense  (pp, dp_replicate, dp_shard, cp, tp)    dp_shard = W / (dp_replicate*cp*tp*pp)
  expert (pp, dp_replicate, efsdp, ep)           efsdp = dp_shard*cp*tp / ep
and validates only that the product is W and that ep divides dp_shard*cp*tp. In rank terms that
is the same two grids in the default order, with etp = 1 (today's torchtitan has no expert
tensor parallelism; without EP the experts follow the dense tp) and dp = dp_replicate*dp_shard,
edp = dp_replicate*efsdp, dp_replicate the high digit of both (HSDP). torchtitan has no order
option.
"""

from __future__ import annotations

from slurm_supernode.errors import PlacementError
from slurm_supernode.placement.model import (
    DEFAULT_ORDER,
    DIMENSIONS,
    EXPERT_ONLY,
    FRAMEWORKS,
    TP_PP_DP_ORDER,
    Layout,
    group_dims,
)

_TO_EXPERT = {"tp": "etp", "ep": "ep", "dp": "edp", "pp": "pp"}


def parse_order(order: str) -> tuple[str, ...]:
    """Validate ``order``: a permutation of tp, cp, ep, dp, pp joined by '-', innermost first."""
    dims = tuple(order.split("-"))
    if sorted(dims) != sorted(DIMENSIONS):
        raise PlacementError(
            f"order {order!r} is not a permutation of {'-'.join(DIMENSIONS)}",
            where="--order",
            hint=f"Megatron-LM uses {DEFAULT_ORDER} (default) or {TP_PP_DP_ORDER} "
            "(--use-tp-pp-dp-mapping)",
        )
    return dims


def grid_of(dim: str) -> str:
    """'expert' for ep, etp, edp, efsdp; 'dense' for the others (pp and dp_replicate groups are
    equal in both grids)."""
    return "expert" if dim in EXPERT_ONLY else "dense"


def grid(layout: Layout, which: str) -> tuple[tuple[str, int], ...]:
    """(dimension, size) of one grid, innermost first, size-1 dimensions included."""
    # torchtitan has one mesh order: pp, dp, cp, tp outermost first = the default order
    tokens = parse_order(layout.order if layout.framework == "megatron" else DEFAULT_ORDER)
    if which == "dense":
        return tuple((t, layout.size(t)) for t in tokens if t != "ep")
    return tuple((_TO_EXPERT[t], layout.size(_TO_EXPERT[t])) for t in tokens if t != "cp")


def strides(layout: Layout, which: str) -> dict[str, int]:
    """Rank distance between neighbours of each dimension of one grid (mixed radix)."""
    out: dict[str, int] = {}
    step = 1
    for dim, size in grid(layout, which):
        out[dim] = step
        step *= size
    return out


# torchtitan's HSDP dims split one grid dimension's digit in two: (whole, sharded part); the
# replicate part (dp_replicate, the same in both grids) is the high digit.
_HSDP_SPLIT = {"dense": ("dp", "dp_shard"), "expert": ("edp", "efsdp")}


def dim_shapes(layout: Layout, which: str) -> dict[str, tuple[int, int]]:
    """(size, stride) of every group dimension of one grid, HSDP parts included (torchtitan)."""
    st = strides(layout, which)
    out = {d: (n, st[d]) for d, n in grid(layout, which)}
    if layout.framework == "torchtitan":
        whole, part = _HSDP_SPLIT[which]
        out[part] = (layout.size(part), st[whole])
        out["dp_replicate"] = (layout.dp_replicate, st[whole] * layout.size(part))
    return out


def all_strides(layout: Layout) -> dict[str, int]:
    """Stride of every group dimension (tp, cp, dp, pp from the dense grid, the rest expert)."""
    dense, expert = dim_shapes(layout, "dense"), dim_shapes(layout, "expert")
    return {d: (expert if d in EXPERT_ONLY else dense)[d][1] for d in group_dims(layout.framework)}


# group dims that cover the same digits: a group may name one of each pair, not both
_OVERLAPS = (
    {"dp", "dp_shard"},
    {"dp", "dp_replicate"},
    {"edp", "efsdp"},
    {"edp", "dp_replicate"},
)


def group_shape(layout: Layout, dims: str) -> tuple[tuple[int, int], ...]:
    """((size, stride), ...) of a group of ``dims`` ('ep', 'dp-cp', ...), innermost first.

    All dimensions of one group must live on one grid (pp and dp_replicate are on both and
    taken from the one their companions live on).
    """
    names = dims.split("-")
    known = group_dims(layout.framework)
    unknown = [n for n in names if n not in known]
    if unknown or len(set(names)) != len(names):
        raise PlacementError(
            f"unknown group {dims!r}", where="group", hint="dimensions: " + ", ".join(known)
        )
    which = "expert" if any(n in EXPERT_ONLY for n in names) else "dense"
    if which == "expert" and any(n in ("tp", "cp", "dp", "dp_shard") for n in names):
        raise PlacementError(f"group {dims!r} mixes the dense and the expert grid", where="group")
    if any(pair <= set(names) for pair in _OVERLAPS):
        raise PlacementError(f"group {dims!r} names a dimension and its part", where="group")
    shapes = dim_shapes(layout, which)
    return tuple(sorted((shapes[n] for n in names), key=lambda ns: (ns[1], -ns[0])))


def coords(rank: int, layout: Layout, which: str) -> dict[str, int]:
    """Coordinates of one rank in one grid (torchtitan: with the HSDP parts of dp / edp)."""
    return {d: rank // s % n for d, (n, s) in dim_shapes(layout, which).items()}


def groups(layout: Layout, dims: str, world: int | None = None) -> list[list[int]]:
    """Every group of ``dims``: members by coordinate (first grid dimension fastest).

    The bases (first members) are the ranks whose coordinates in ``dims`` are all 0; they
    come out in rank order, so groups are ordered by first rank, as the frameworks list them.
    """
    world = layout.world_size if world is None else world
    shape = [(n, s) for n, s in group_shape(layout, dims) if n > 1]
    offsets = [0]
    for n, s in shape:  # innermost first: offsets[k] has the first dimension fastest
        offsets = [o + i * s for i in range(n) for o in offsets]
    bases = [0]
    low = 1  # the free digits: below each grouped dimension's stride, and above the last one
    for n, s in sorted(shape, key=lambda ns: ns[1]):
        bases = [b + q for q in range(0, s, low) for b in bases]
        low = s * n
    bases = sorted(b + q for q in range(0, world, low) for b in bases)
    return [[b + o for o in offsets] for b in bases]


# -- feasibility, as each framework asserts it ------------------------------------------------
def framework_problem(layout: Layout, world: int) -> str | None:
    """The framework's own reason why ``layout`` cannot run on ``world`` ranks; None if it can."""
    if layout.framework not in FRAMEWORKS:
        return f"unknown framework {layout.framework!r} (one of {', '.join(FRAMEWORKS)})"
    for name in ("tp", "cp", "ep", "etp", "pp", "dp_replicate"):
        if layout.size(name) < 1:
            return f"{name}={layout.size(name)} must be at least 1"
    if layout.framework == "megatron":
        if layout.dp_replicate != 1:
            return (
                f"dp_replicate={layout.dp_replicate} is torchtitan's HSDP degree; Megatron-Core "
                "has no such layout option"
            )
        return _megatron_problem(layout, world)
    return _torchtitan_problem(layout, world)


def _megatron_problem(lay: Layout, world: int) -> str | None:
    tp, cp, pp, ep, etp = lay.tp, lay.cp, lay.pp, lay.ep, lay.expert_tp
    model = tp * pp * cp
    if world % model:
        return f"Megatron-Core: world_size ({world}) is not divisible by tp*pp*cp ({model})"
    expert = etp * ep * pp
    if world % expert:
        return (
            f"Megatron-Core: world_size ({world}) is not divisible by "
            f"expert_tensor_model_pipeline_parallel size etp*ep*pp ({expert})"
        )
    dp, edp = world // model, world // expert
    tokens = parse_order(lay.order)
    if not (tokens[-1] == "pp" or pp == 1 or edp == dp):
        return (
            "Megatron-Core: when not using pp-last rank ordering, the data parallel size of the "
            f"attention and moe layers must be the same (order {lay.order}: dp={dp}, edp={edp};"
            f" needs etp*ep = tp*cp, here {etp * ep} != {tp * cp})"
        )
    probe = Layout(tp=tp, cp=cp, ep=ep, dp=dp, pp=pp, order=lay.order, etp=etp, edp=edp)
    if pp > 1 and strides(probe, "dense")["pp"] != strides(probe, "expert")["pp"]:
        return (
            "Megatron-Core: pipeline parallel groups are expected to be the same for the "
            f"non-expert and the expert part (order {lay.order} puts PP neighbours "
            f"{strides(probe, 'dense')['pp']} ranks apart in the dense grid, "
            f"{strides(probe, 'expert')['pp']} in the expert grid)"
        )
    return None


def _torchtitan_problem(lay: Layout, world: int) -> str | None:
    """``ParallelDims._validate`` (dp_shard = -1: inferred), after snrun's two inputs it has no
    setting for: the order, and an etp other than the one torchtitan implies."""
    if lay.order != DEFAULT_ORDER:
        return (
            "torchtitan builds its meshes in one fixed order (pp, dp, cp, tp outermost first, "
            f"= {DEFAULT_ORDER}); --order {lay.order} is for --framework megatron"
        )
    tp, cp, pp, ep, dp_replicate = lay.tp, lay.cp, lay.pp, lay.ep, lay.dp_replicate
    if ep > 1 and lay.etp not in (None, 1):
        return (
            f"torchtitan has no expert tensor parallelism: with EP the experts are sharded "
            f"over ep only (etp=1), here etp={lay.etp}"
        )
    dp_shard = world // (dp_replicate * cp * tp * pp)
    if dp_shard < 1 or dp_replicate * dp_shard * cp * tp * pp != world:
        return (
            f"torchtitan: Invalid parallel dims: dp_replicate({dp_replicate}) * "
            f"dp_shard({dp_shard}) * cp({cp}) * tp({tp}) * pp({pp}) != WORLD_SIZE({world})"
        )
    sparse_region = dp_shard * cp * tp
    if sparse_region % ep:
        return (
            f"torchtitan: expert_parallel_degree ({ep}) must divide "
            f"dp_shard * cp * tp ({sparse_region})"
        )
    return None


def derived(layout: Layout, world: int) -> Layout:
    """``layout`` with dp, edp and etp filled in (the layout must be feasible)."""
    dp = world // (layout.tp * layout.cp * layout.pp)
    edp = world // (layout.expert_tp * layout.ep * layout.pp)
    return Layout(
        tp=layout.tp,
        cp=layout.cp,
        ep=layout.ep,
        dp=dp,
        pp=layout.pp,
        order=layout.order,
        etp=layout.expert_tp,
        edp=edp,
        framework=layout.framework,
        dp_replicate=layout.dp_replicate,
    )
