"""An independent reference for the frameworks' rank groups, written from their documented rules.

Kept apart from the product code (``placement/layout.py``) on purpose: nothing here imports it,
and the derivations differ (coordinate tables grouped by key; torchtitan through row-major mesh
reshapes), so a shared mistake is unlikely.

Megatron-Core (``parallel_state.py``): ``initialize_model_parallel`` builds two RankGenerators
from the same order string (innermost/fastest first):
  decoder: tp=tp, cp=cp, ep=1, dp=W/(tp*pp*cp), pp=pp
  expert:  tp=etp, cp=1, ep=ep, dp=W/(etp*ep*pp), pp=pp
``get_ranks(token)`` = ranks that share every coordinate not named in ``token``, listed in rank
order, groups ordered by their first rank. Asserted: W % (tp*pp*cp) == 0, W % (etp*ep*pp) == 0,
``order.endswith("pp") or pp == 1 or expert dp == dp``, and equal PP groups in both generators.
Megatron-LM: order tp-cp-ep-dp-pp, or tp-cp-ep-pp-dp with --use-tp-pp-dp-mapping.

torchtitan (``ParallelDims`` in torchtitan/distributed/parallel_dims.py, commit b5bcd76c66d0 of
2026-08-21): ``_validate`` infers dp_shard = W // (dp_replicate*cp*tp*pp) (dp_shard = -1),
asserts dp_shard >= 1 and dp_replicate*dp_shard*cp*tp*pp == W, and raises unless ep divides
dp_shard*cp*tp. ``build_mesh`` unflattens the world mesh (row-major, first name outermost) into
  (pp, batch, cp, tp)                        batch = dp_replicate*dp_shard; loss = batch x cp
  (pp, dp_replicate, dp_shard, cp, tp)       spmd_types storage mesh
  (pp, dp, cp, tp)                           spmd_types fwd/bwd mesh, dp = batch
  (pp, dp_replicate, fsdp, tp)               partial_dtensor mesh, fsdp = dp_shard*cp
  (pp, dp_replicate, efsdp, ep)              sparse mesh, efsdp = dp_shard*cp*tp/ep
It has no expert tensor parallelism: with EP the experts are sharded over ep (and FSDP over
efsdp, replicated over dp_replicate); without EP they use the dense mesh (tp, fsdp).
"""

from __future__ import annotations

import functools
import itertools
from collections import defaultdict

DENSE = ("tp", "cp", "dp", "pp")
EXPERT = ("etp", "ep", "edp", "pp")


# -- Megatron-Core ----------------------------------------------------------------------------
def megatron_feasible(world, tp, cp, ep, etp, pp, order) -> bool:
    if world % (tp * pp * cp) or world % (etp * ep * pp):
        return False
    dp, edp = world // (tp * pp * cp), world // (etp * ep * pp)
    if not (order.endswith("pp") or pp == 1 or edp == dp):
        return False
    sizes = (world, tp, cp, ep, etp, pp)
    dense_pp = _megatron_table_groups(world, _dense_sizes(*sizes), order, "pp")
    expert_pp = _megatron_table_groups(world, _expert_sizes(*sizes), order, "pp")
    return dense_pp == expert_pp


def _dense_sizes(world, tp, cp, ep, etp, pp):
    return {"tp": tp, "cp": cp, "ep": 1, "dp": world // (tp * cp * pp), "pp": pp}


def _expert_sizes(world, tp, cp, ep, etp, pp):
    return {"tp": etp, "cp": 1, "ep": ep, "dp": world // (etp * ep * pp), "pp": pp}


@functools.lru_cache(maxsize=64)
def _table(world, radix, names):
    """Rank r <-> its digits, first name fastest (itertools.product varies the last fastest)."""
    table = [
        dict(zip(reversed(names), digits, strict=True))
        for digits in itertools.product(*(range(n) for n in reversed(radix)))
    ]
    assert len(table) == world
    return table


def _megatron_table_groups(world, sizes, order, token):
    """RankGenerator.get_ranks(token): group the coordinate table by the other coordinates."""
    names = tuple(order.split("-"))
    table = _table(world, tuple(sizes[n] for n in names), names)
    keep = set(token.split("-"))
    by_key = defaultdict(list)
    for rank, c in enumerate(table):
        by_key[tuple(c[n] for n in names if n not in keep)].append(rank)
    return sorted((sorted(g) for g in by_key.values()), key=lambda g: g[0])


def megatron_groups(world, tp, cp, ep, etp, pp, order) -> dict[str, list[list[int]]]:
    """Our dimension names -> Megatron's groups (tp, cp, dp, pp, dp-cp dense; ep, etp, edp)."""
    dense = _dense_sizes(world, tp, cp, ep, etp, pp)
    expert = _expert_sizes(world, tp, cp, ep, etp, pp)
    return {
        "tp": _megatron_table_groups(world, dense, order, "tp"),
        "cp": _megatron_table_groups(world, dense, order, "cp"),
        "dp": _megatron_table_groups(world, dense, order, "dp"),
        "pp": _megatron_table_groups(world, dense, order, "pp"),
        "dp-cp": _megatron_table_groups(world, dense, order, "dp-cp"),
        "ep": _megatron_table_groups(world, expert, order, "ep"),
        "etp": _megatron_table_groups(world, expert, order, "tp"),
        "edp": _megatron_table_groups(world, expert, order, "dp"),
    }


# -- torchtitan -------------------------------------------------------------------------------
def torchtitan_feasible(world, tp, cp, ep, etp, pp, dp_replicate=1) -> bool:
    """``ParallelDims._validate`` with data_parallel_shard_degree = -1; ``etp`` is snrun's
    input, and only "none" (1, or unset) describes a torchtitan run with EP."""
    if ep > 1 and etp not in (None, 1):
        return False
    if min(dp_replicate, cp, tp, pp, ep) < 1:
        return False
    dp_shard = world // (dp_replicate * cp * tp * pp)
    if dp_shard < 1 or dp_replicate * dp_shard * cp * tp * pp != world:
        return False
    return (dp_shard * cp * tp) % ep == 0


class DeviceMeshRanks:
    """The rank groups of ``init_device_mesh((W,))._unflatten(0, sizes, names)``: the world's
    ranks reshaped row-major, first name outermost. The process group of one axis, or of
    several flattened (``mesh[names]._flatten()``), holds the ranks that share every other
    coordinate."""

    def __init__(self, world: int, names: tuple[str, ...], sizes: tuple[int, ...]) -> None:
        self.world, self.names, self.sizes = world, names, sizes

    def groups(self, *axes: str) -> list[list[int]]:
        rest = tuple(i for i, n in enumerate(self.names) if n not in axes)
        return [list(g) for g in _mesh_groups(self.world, self.sizes, rest)]


@functools.lru_cache(maxsize=4096)
def _mesh_groups(world, sizes, rest) -> tuple[tuple[int, ...], ...]:
    """Ranks in row-major order (itertools.product varies the last fastest), grouped by the
    coordinates at ``rest``; cached: the grid's layouts share most meshes."""
    coords = list(itertools.product(*(range(n) for n in sizes)))
    assert len(coords) == world, (sizes, world)
    by_key = defaultdict(list)
    for rank, c in enumerate(coords):
        by_key[tuple(c[i] for i in rest)].append(rank)
    return tuple(sorted(tuple(g) for g in by_key.values()))  # disjoint: by first rank


def torchtitan_groups(world, tp, cp, ep, etp, pp, dp_replicate=1) -> dict[str, list[list[int]]]:
    """Our dimension names -> torchtitan's groups (``etp`` unused: torchtitan has none)."""
    del etp
    dr = dp_replicate
    dp_shard = world // (dr * cp * tp * pp)
    batch, fsdp, efsdp = dr * dp_shard, dp_shard * cp, dp_shard * cp * tp // ep
    dataloading = DeviceMeshRanks(world, ("pp", "batch", "cp", "tp"), (pp, batch, cp, tp))
    storage = DeviceMeshRanks(
        world, ("pp", "dp_replicate", "dp_shard", "cp", "tp"), (pp, dr, dp_shard, cp, tp)
    )
    fwdbwd = DeviceMeshRanks(world, ("pp", "dp", "cp", "tp"), (pp, batch, cp, tp))
    partial = DeviceMeshRanks(world, ("pp", "dp_replicate", "fsdp", "tp"), (pp, dr, fsdp, tp))
    sparse = DeviceMeshRanks(world, ("pp", "dp_replicate", "efsdp", "ep"), (pp, dr, efsdp, ep))
    out = {
        "pp": dataloading.groups("pp"),
        "tp": dataloading.groups("tp"),
        "cp": dataloading.groups("cp"),
        "dp": fwdbwd.groups("dp"),
        "dp-cp": dataloading.groups("batch", "cp"),  # the loss mesh
        "dp_replicate": storage.groups("dp_replicate"),
        "dp_shard": storage.groups("dp_shard"),
        "dp_shard-cp": partial.groups("fsdp"),
    }
    singletons = [[r] for r in range(world)]
    if ep > 1:
        assert sparse.groups("dp_replicate") == out["dp_replicate"]
        out |= {
            "ep": sparse.groups("ep"),
            "etp": singletons,
            "efsdp": sparse.groups("efsdp"),
            "edp": sparse.groups("dp_replicate", "efsdp"),
        }
    else:  # no EP: the experts live on the dense mesh (tp, FSDP over fsdp, dp_replicate)
        out |= {
            "ep": singletons,
            "etp": out["tp"],
            "efsdp": out["dp_shard-cp"],
            "edp": out["dp-cp"],
        }
    return out
