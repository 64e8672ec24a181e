"""Search tp/cp/ep/pp factorisations of an allocation and rank them by modelled step time.

Why a search and not a rule: "TP inside the fastest domain, DP across" is the rule of thumb,
but the best split also depends on layers (pp must divide them), experts (ep), the sequence
(cp) and the allocation's shape. The search prices each feasible layout with the same cost
model as ``plan``, from the node order alone (no per-rank list), so it stays cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from slurm_supernode.errors import InputError
from slurm_supernode.placement import layout as grids
from slurm_supernode.placement.checks import divisors, layout_problem
from slurm_supernode.placement.cost import (
    StepCost,
    Workload,
    levels_for,
    refine_levels,
    step_cost,
)
from slurm_supernode.placement.layout import parse_order
from slurm_supernode.placement.model import DEFAULT_FRAMEWORK, DEFAULT_ORDER, Layout
from slurm_supernode.placement.rankmap import (
    choose_devices,
    order_nodes,
    pack_nodes,
    parse_hosts,
    resolve_nproc,
)
from slurm_supernode.site.model import Site

MAX_CP = 16


@dataclass(frozen=True, slots=True)
class Candidate:
    rank: int
    cost: StepCost
    levels: dict[str, str | None]

    def as_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "levels": self.levels} | self.cost.as_dict()


def candidate_layouts(
    world: int,
    nproc: int,
    work: Workload,
    order: str = DEFAULT_ORDER,
    framework: str = DEFAULT_FRAMEWORK,
) -> list[Layout]:
    """Every layout the framework runs: pp divides layers, ep divides experts, cp the seq.

    Expert TP is the framework's default (etp = tp).
    """
    model = work.model
    ws = divisors(world)
    tps = [t for t in ws if nproc % t == 0 or t % nproc == 0]
    pps = [p for p in ws if model.layers % p == 0]
    cps = [c for c in ws if c <= MAX_CP and model.seq % c == 0]
    eps = [e for e in ws if model.experts % e == 0] if model.is_moe else [1]
    out = []
    for tp in tps:
        for pp in pps:
            for cp in cps:
                for ep in eps:
                    problem = layout_problem(
                        tp, cp, ep, pp, world, nproc, order=order, framework=framework
                    )
                    if problem is None:
                        lay = Layout(tp=tp, cp=cp, ep=ep, pp=pp, order=order, framework=framework)
                        out.append(grids.derived(lay, world))
    return out


def recommend(
    site: Site,
    hosts: Sequence[str] | str,
    work: Workload,
    nproc_per_node: int | None = None,
    *,
    order: str = DEFAULT_ORDER,
    framework: str = DEFAULT_FRAMEWORK,
    device_memory_gb: float | None = None,
    top: int = 10,
) -> list[Candidate]:
    """The ``top`` layouts by modelled step time (ties: less communication, smaller tp, pp)."""
    parse_order(order)
    nodes = order_nodes(site, parse_hosts(hosts), physical=True)
    nproc = resolve_nproc(nodes, nproc_per_node)
    world = len(nodes) * nproc
    scored = []
    for lay in candidate_layouts(world, nproc, work, order, framework):
        # the node order and devices the rank map would use for this layout (packed)
        packed = pack_nodes(nodes, lay, nproc)
        sn_of = [n.supernode for n in packed]
        block = lay.tp if lay.tp <= nproc else nproc
        specs = {(choose_devices(n.spec, nproc, block), n.spec.device_groups) for n in nodes}
        levels = refine_levels(levels_for(lay, nproc, sn_of), lay, nproc, specs)
        cost = step_cost(site, lay, levels, work)
        if device_memory_gb is not None and cost.memory_gb > device_memory_gb:
            continue
        scored.append((cost.step_s, cost.comm_s, lay.tp, lay.pp, lay.cp, lay.ep, cost, levels))
    if not scored:
        raise InputError(
            f"no layout of {world} devices fits the model in {device_memory_gb} GB per device",
            where="--device-memory",
            hint="add nodes, or raise --device-memory",
        )
    scored.sort(key=lambda t: t[:6])
    return [Candidate(i + 1, t[6], t[7]) for i, t in enumerate(scored[:top])]
