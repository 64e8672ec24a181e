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

torchtitan (``ParallelDims.build_mesh``) unflattens the world into row-major meshes
[pp, dp_replicate, dp_shard*cp, tp] (dense) and [pp, dp_replicate, dp_shard_in_ep, ep, tp]
(experts; no tp axis when etp = 1): EP is carved out of dp_shard*cp (and tp when etp = 1),
innermost after etp. In rank terms that is the same two grids in the default order; torchtitan
has no order option and asserts etp in {tp, 1} and how ep divides cp, tp and dp_shard.
"""

from __future__ import annotations

from slurm_supernode.errors import PlacementError
from slurm_supernode.placement.model import (
    DEFAULT_ORDER,
    DIMENSIONS,
    EXPERT_ONLY,
    FRAMEWORKS,
    GROUP_DIMS,
    TP_PP_DP_ORDER,
    Layout,
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
    """'expert' for ep, etp, edp; 'dense' for tp, cp, dp, pp (pp groups are equal in both)."""
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


def all_strides(layout: Layout) -> dict[str, int]:
    """Stride of every group dimension (tp, cp, dp, pp from the dense grid, the rest expert)."""
    dense, expert = strides(layout, "dense"), strides(layout, "expert")
    return {d: (expert if d in EXPERT_ONLY else dense)[d] for d in GROUP_DIMS}


def group_shape(layout: Layout, dims: str) -> tuple[tuple[int, int], ...]:
    """((size, stride), ...) of a group of ``dims`` ('ep', 'dp-cp', ...), innermost first.

    All dimensions of one group must live on one grid (pp is on both and taken from the
    one its companions live on).
    """
    names = dims.split("-")
    unknown = [n for n in names if n not in GROUP_DIMS]
    if unknown or len(set(names)) != len(names):
        raise PlacementError(
            f"unknown group {dims!r}", where="group", hint="dimensions: " + ", ".join(GROUP_DIMS)
        )
    which = "expert" if any(n in EXPERT_ONLY for n in names) else "dense"
    if which == "expert" and any(n in ("tp", "cp", "dp") for n in names):
        raise PlacementError(f"group {dims!r} mixes the dense and the expert grid", where="group")
    st = strides(layout, which)
    sizes = dict(grid(layout, which))
    return tuple((sizes[n], st[n]) for n in st if n in names)  # grid order


def coords(rank: int, layout: Layout, which: str) -> dict[str, int]:
    """Coordinates of one rank in one grid."""
    out: dict[str, int] = {}
    rest = rank
    for dim, size in grid(layout, which):
        rest, out[dim] = divmod(rest, size)
    return out


def groups(layout: Layout, dims: str, world: int | None = None) -> list[list[int]]:
    """Every group of ``dims``: members by coordinate (first grid dimension fastest).

    The bases (first members) are the ranks whose coordinates in ``dims`` are all 0; they
    come out in rank order, so groups are ordered by first rank, as the frameworks list them.
    """
    world = layout.world_size if world is None else world
    shape = group_shape(layout, dims)
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
    for name in ("tp", "cp", "ep", "etp", "pp"):
        if layout.size(name) < 1:
            return f"{name}={layout.size(name)} must be at least 1"
    if layout.framework == "megatron":
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
    if lay.order != DEFAULT_ORDER:
        return (
            "torchtitan builds its meshes in one fixed order (pp, dp, cp, tp outermost first, "
            f"= {DEFAULT_ORDER}); --order {lay.order} is for --framework megatron"
        )
    tp, cp, pp, ep, etp = lay.tp, lay.cp, lay.pp, lay.ep, lay.expert_tp
    dp_shard = world // (cp * tp * pp)
    if dp_shard < 1 or dp_shard * cp * tp * pp != world:
        return (
            f"torchtitan: invalid parallel dims: dp_replicate(1) * dp_shard({dp_shard}) * "
            f"cp({cp}) * tp({tp}) * pp({pp}) != WORLD_SIZE({world})"
        )
    if ep > 1:
        if etp not in (tp, 1):
            return f"torchtitan: currently only ETP=TP or ETP=1 are supported (etp={etp}, tp={tp})"
        if etp == tp and not (ep % cp == 0 and (dp_shard * cp) % ep == 0):
            return (
                f"torchtitan: with etp=tp, EP borrows all of cp and part of dp_shard: needs "
                f"ep % cp == 0 and (dp_shard*cp) % ep == 0 (ep={ep}, cp={cp}, dp_shard={dp_shard})"
            )
        if etp == 1 and etp != tp and not (ep % (cp * tp) == 0 and (dp_shard * cp * tp) % ep == 0):
            return (
                "torchtitan: with etp=1, EP borrows all of cp and tp and part of dp_shard: needs "
                f"ep % (cp*tp) == 0 and (dp_shard*cp*tp) % ep == 0 "
                f"(ep={ep}, cp={cp}, tp={tp}, dp_shard={dp_shard})"
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
    )
