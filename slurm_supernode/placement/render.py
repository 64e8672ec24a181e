"""Plain-text rendering of a plan for people; JSON (``rank_map_to_json``) is for machines.

Why plain text: the output must stay readable in a terminal and in a job log, diff well in
tests, and summarise large maps (a 100,000-rank map shows its first and last nodes, not
100,000 lines).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from slurm_supernode.placement.model import RankMap, group_dims

LAYOUT_KEYS = ("tp", "cp", "ep", "etp", "dp", "edp", "pp")
EXPERT_DIMS = ("ep", "etp", "edp")  # hidden for a dense model: it forms no expert groups

HEAD_NODES = 8
TAIL_NODES = 4


def _table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> list[str]:
    cells = [list(map(str, header))] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]


def _devices(devs: Sequence[int]) -> str:
    return ",".join(map(str, devs))


def _first_group(size: int, stride: int, limit: int = 6) -> str:
    """Rank 0's group (the others follow by shifting it): '0,2,4,6' or '0,8,...,120'."""
    members = [k * stride for k in range(size)]
    if len(members) > limit:
        return ",".join(map(str, members[: limit - 2])) + ",...," + str(members[-1])
    return ",".join(map(str, members))


def render_plan(
    rm: RankMap,
    *,
    site_name: str = "",
    recommendations: Sequence[dict[str, Any]] | None = None,
    max_nodes: int = 16,
    dense: bool = False,
    device_memory: tuple[float | None, str] = (None, ""),
) -> str:
    """The plan as text. ``dense``: leave out the expert dimensions (a dense model has none);
    ``device_memory``: (GB per device or None, where that figure came from)."""
    out = [*_heading(rm, site_name, dense), "", *_node_table(rm, max_nodes), ""]
    out += _groups_section(rm, dense)
    checks = [c for c in rm.checks if not c.name.startswith("span-")]
    if checks:
        out.append("Checks")
        out += [f"  {'ok  ' if c.ok else 'WARN'}  {c.name}: {c.detail}" for c in checks]
        out.append("")
    if rm.cost:
        out += render_cost(rm.cost, device_memory)
    if recommendations:
        out += render_recommendations(recommendations, dense=dense, device_memory=device_memory)
    return "\n".join(out).rstrip() + "\n"


def _heading(rm: RankMap, site_name: str, dense: bool) -> list[str]:
    """The plan's size and its layout, dense and expert (and HSDP for torchtitan); a dense
    model's heading leaves the expert dimensions out."""
    lay, nproc = rm.layout, rm.nproc_per_node
    sns = len({n.supernode for n in rm.nodes})
    expert = f"; expert etp={lay.expert_tp} ep={lay.ep} edp={lay.edp} pp={lay.pp}"
    return [
        f"Plan: {rm.world_size} ranks = {len(rm.nodes)} nodes x {nproc} on {sns} super node"
        + ("s" if sns != 1 else "")
        + (f" (site {site_name})" if site_name else ""),
        f"Layout ({lay.framework}, order {lay.order}, innermost first): "
        f"{'' if dense else 'dense '}tp={lay.tp} cp={lay.cp} dp={lay.dp} pp={lay.pp}"
        + ("" if dense else expert)
        + (
            f"; HSDP dp_replicate={lay.dp_replicate} dp_shard={lay.dp_shard} efsdp={lay.efsdp}"
            if lay.framework == "torchtitan"
            else ""
        ),
    ]


def _node_table(rm: RankMap, max_nodes: int) -> list[str]:
    """One row per node (its ranks and devices); past ``max_nodes``, the first and last ones."""
    nproc = rm.nproc_per_node
    nodes = list(rm.nodes)
    skipped = 0
    if len(nodes) > max_nodes:
        skipped = len(nodes) - HEAD_NODES - TAIL_NODES
        nodes = nodes[:HEAD_NODES] + nodes[-TAIL_NODES:]
    rows = []
    for n in nodes:
        first = n.node_rank * nproc
        rows.append(
            [
                n.node_rank,
                n.hostname,
                n.supernode,
                f"{first}-{first + nproc - 1}",
                _devices(n.visible_devices),
            ]
        )
    lines = _table(rows, ["NODE", "HOST", "SUPERNODE", "RANKS", "DEVICES"])
    if skipped:
        lines.insert(1 + HEAD_NODES, f"... {skipped} more nodes ...")
    return lines


def _groups_section(rm: RankMap, dense: bool = False) -> list[str]:
    """Per group dimension: its groups and how many cross nodes and super nodes (none without
    the span checks)."""
    lay = rm.layout
    spans = {
        c.name.removeprefix("span-"): c.detail for c in rm.checks if c.name.startswith("span-")
    }
    if not spans:
        return []
    from slurm_supernode.placement.layout import all_strides, grid_of

    strides = all_strides(lay)
    rows = []
    for d in group_dims(lay.framework):
        if dense and d in EXPERT_DIMS:
            continue
        sp = rm.spans.get(d, {})
        rows.append(
            [
                d,
                grid_of(d),
                lay.size(d),
                _first_group(lay.size(d), strides[d]),
                rm.world_size // lay.size(d),
                sp.get("supernode", 0) + sp.get("inter", 0),
                sp.get("inter", 0),
                _minimum_cell(rm, d),
                spans.get(d, ""),
            ]
        )
    header = ["DIM", "GRID", "SIZE", "FIRST GROUP", "GROUPS", "X-NODE", "X-SN", "MIN-X-SN"]
    return ["Groups", *_table(rows, [*header, "SPAN"]), *_minimum_lines(rm, dense), ""]


def _minimum_cell(rm: RankMap, dim: str) -> str:
    if not rm.crossing_min:
        return "-"  # the baseline map: no packing, no claim
    value = rm.crossing_min.get(dim)
    return "n/c" if value is None else str(value)


def _minimum_lines(rm: RankMap, dense: bool = False) -> list[str]:
    """Say what MIN-X-SN is, how it was found, and whether the map sits at it."""
    if not rm.crossing_min:
        return []
    from slurm_supernode.placement.rankmap import pack_priority

    dims = [d for d in pack_priority(rm.layout) if not (dense and d in EXPERT_DIMS)]
    talk = [d for d in dims if rm.layout.size(d) > 1]
    out = [
        "MIN-X-SN: the fewest groups crossing super nodes over every assignment of node ranks",
        "  to these nodes, each dimension given the ones before it at their minimum",
        f"  ({', '.join(dims)}); X-NODE is fixed by nproc and layout (docs/planner.md)",
    ]
    by: dict[str, list[str]] = {}
    for d in talk:
        by.setdefault(rm.crossing_min_by.get(d) or "not computed", []).append(d)
    if by:
        out.append("minimum: " + "; ".join(f"{how} ({', '.join(ds)})" for how, ds in by.items()))
    known = [d for d in talk if rm.crossing_min.get(d) is not None]
    above = [d for d in known if rm.spans.get(d, {}).get("inter", 0) != rm.crossing_min.get(d)]
    unknown = [d for d in talk if d not in known]
    if above:
        out.append(f"placement: ABOVE the minimum for {', '.join(above)}")
    elif unknown:
        out.append(
            f"placement: at the minimum for {', '.join(known) or 'no dimension'}; "
            f"minimum: not computed for {', '.join(unknown)} (packed best effort)"
        )
    elif talk:
        out.append("placement: at the minimum in every dimension")
    return out


def compute_words(cost: dict[str, Any]) -> str:
    """Where the compute time of a step comes from, in words."""
    if cost["compute_source"] == "given":
        return "compute time per step as given (--compute-time)"
    return (
        f"compute = 6 x active parameters x tokens / devices / ({cost['tflops']:g} TFLOP/s "
        f"peak per device x {cost['mfu']:g} MFU), + the pipeline bubble"
    )


def render_cost(
    cost: dict[str, Any], device_memory: tuple[float | None, str] = (None, "")
) -> list[str]:
    plan = cost["plan"]
    model = cost["model"]
    out = [
        f"Communication per step (model {model['name']}, global batch {plan['global_batch']} "
        f"sequences, {plan['micro_batches']} micro-batches)",
        f"  {compute_words(cost)}",
    ]
    base = cost.get("baseline")
    base_dims = {d["dim"]: d for d in base["dims"]} if base else {}
    rows = []
    for d in plan["dims"]:
        if d["level"] is None:
            continue
        row = [d["dim"], d["size"], d["level"], f"{d['bytes'] / 1e9:.2f}", d["bandwidth_GBps"]]
        row.append(f"{d['time_s']:.3f}")
        if base:
            b = base_dims[d["dim"]]
            row += [b["level"], f"{b['time_s']:.3f}"]
        rows.append(row)
    header = ["DIM", "SIZE", "LEVEL", "GB/DEV", "GB/s", "TIME(s)"]
    if base:
        header += ["SLURM-ORDER", "TIME(s)"]
    out += _table(rows, header) if rows else ["  (no communication: every dimension is 1)"]
    out.append(_summary("plan", plan))
    if base:
        out.append(_summary("slurm hostname order", base))
        out.append(f"topology-aware placement: {cost['speedup']:.2f}x step speed")
    share = plan["comm_share"]
    if share > 0.4:
        out.append("communication > 40% of the step: a super node is nearly mandatory")
    elif share > 0.2:
        out.append("communication > 20% of the step: a super node pays off")
    out.append(_memory_line(plan["memory_gb"], device_memory))
    out.append("")
    return out


def _memory_line(state_gb: float, device_memory: tuple[float | None, str]) -> str:
    limit, source = device_memory
    if limit is None:
        return (
            f"memory: state {state_gb:.1f} GB/device not checked: the site gives no "
            "device_memory_gb (--device-memory GB checks it)"
        )
    whose = "the site's devices" if source == "site" else f"{source} {limit:g}"
    if state_gb > limit:
        return (
            f"memory: WARN state {state_gb:.1f} GB/device does not fit {whose} ({limit:g} GB): "
            "raise tp/pp/ep, or --recommend for layouts that fit"
        )
    return f"memory: state {state_gb:.1f} GB/device fits {whose} ({limit:g} GB; no activations)"


def _summary(name: str, c: dict[str, Any]) -> str:
    bubble = f" + bubble {c['bubble_s']:.3f} s" if c["bubble_s"] else ""
    return (
        f"{name}: compute {c['compute_s']:.3f} s{bubble} + comm {c['comm_s']:.3f} s = "
        f"step {c['step_s']:.3f} s; communication {100 * c['comm_share']:.1f}%; "
        f"state {c['memory_gb']:.1f} GB/device"
    )


def render_recommendations(
    cands: Sequence[dict[str, Any]],
    *,
    dense: bool = False,
    device_memory: tuple[float | None, str] = (None, ""),
) -> list[str]:
    keys = [d for d in LAYOUT_KEYS if not (dense and d in EXPERT_DIMS)]
    rows = []
    for c in cands:
        lay = c["layout"]
        spans = [f"{d}:{lv}" for d, lv in c["levels"].items() if lv]
        rows.append(
            [c["rank"]]
            + [lay[d] for d in keys]
            + [
                f"{c['step_s']:.3f}",
                f"{100 * c['comm_share']:.1f}",
                f"{c['memory_gb']:.1f}",
                " ".join(s for s in spans if not (dense and s.split(":")[0] in EXPERT_DIMS)),
            ]
        )
    header = ["#", *(d.upper() for d in keys), "STEP(s)", "COMM%", "STATE GB", "SPANS"]
    limit, _ = device_memory
    fits = (
        f"; only layouts whose state fits {limit:g} GB per device"
        if limit is not None
        else "; device memory unknown: STATE GB not checked"
    )
    return [f"Recommended layouts (by modelled step time{fits})", *_table(rows, header), ""]
