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

torchtitan (``ParallelDims``): dp_shard = W/(cp*tp*pp) (dp_replicate = 1); meshes are row-major
unflattens of range(W): dense [pp, dp_shard, cp, tp]; EP region [pp, dp_shard_in_ep, ep, tp] when
etp == tp (dp_shard_in_ep = dp_shard*cp/ep) or [pp, dp_shard_in_ep, ep] when etp == 1
(dp_shard_in_ep = dp_shard*cp*tp/ep). Asserted for ep > 1: etp in (tp, 1); etp == tp needs
ep % cp == 0 and dp_shard*cp % ep == 0; etp == 1 needs ep % (cp*tp) == 0, dp_shard*cp*tp % ep == 0.
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
def torchtitan_feasible(world, tp, cp, ep, etp, pp) -> bool:
    if world % (cp * tp * pp):
        return False
    dp_shard = world // (cp * tp * pp)
    if ep > 1:
        if etp not in (tp, 1):
            return False
        if etp == tp:
            return ep % cp == 0 and (dp_shard * cp) % ep == 0
        return ep % (cp * tp) == 0 and (dp_shard * cp * tp) % ep == 0
    return True  # etp has no effect when ep = 1 (torchtitan's documented rule)


def _mesh_groups(world, shape, axes):
    """Row-major mesh of range(world) with ``shape``; groups along ``axes`` (indices)."""
    strides = []
    step = 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    strides = list(reversed(strides))
    assert step == world
    out = []
    others = [i for i in range(len(shape)) if i not in axes]
    for fixed in itertools.product(*(range(shape[i]) for i in others)):
        base = sum(f * strides[i] for f, i in zip(fixed, others, strict=True))
        members = [
            base + sum(v * strides[a] for v, a in zip(vals, axes, strict=True))
            for vals in itertools.product(*(range(shape[a]) for a in axes))
        ]
        out.append(sorted(members))
    return sorted(out, key=lambda g: g[0])


def torchtitan_groups(world, tp, cp, ep, etp, pp) -> dict[str, list[list[int]]]:
    dp_shard = world // (cp * tp * pp)
    if ep == 1:
        etp = tp  # no EP region: experts are sharded like the dense weights (tp, dp_shard_cp)
    dense = [pp, dp_shard, cp, tp]  # pp, dp (= dp_replicate 1 x dp_shard), cp, tp
    out = {
        "pp": _mesh_groups(world, dense, [0]),
        "dp": _mesh_groups(world, dense, [1]),
        "cp": _mesh_groups(world, dense, [2]),
        "tp": _mesh_groups(world, dense, [3]),
        "dp-cp": _mesh_groups(world, dense, [1, 2]),
    }
    if etp == tp:
        ep_mesh = [pp, dp_shard * cp // ep, ep, tp]
        out["etp"] = _mesh_groups(world, ep_mesh, [3])
    else:
        ep_mesh = [pp, dp_shard * cp * tp // ep, ep]
        out["etp"] = [[r] for r in range(world)]
    out["ep"] = _mesh_groups(world, ep_mesh, [2])
    out["edp"] = _mesh_groups(world, ep_mesh, [1])
    return out
