"""Write the plan JSON fast: one node or rank per line, the rest indented.

Why not ``json.dump(doc, indent=1)``: with ``indent`` the standard library falls back to its
pure-Python encoder, which writes ~6 M small chunks for a 100,000-rank plan (~4 s). Here the
big lists (``nodes``, ``ranks``) are written one compact object per line, ranks straight from
the rank map with string formatting (no per-rank dict), everything else with ``json.dumps``.
The text parses to exactly ``rank_map_to_json(rm) | extra`` (tests/placement/test_planjson.py
checks it), key order included, so readers see no difference but the whitespace.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import chain, cycle, product, repeat
from json.encoder import encode_basestring_ascii
from typing import Any, TextIO

from slurm_supernode.placement.model import GridDims, RankList, RankMap, RankPlacement

_CHUNK = 4096  # lines per write: few write calls, bounded extra memory


def _coords_template(c: dict[str, int]) -> str:
    """'{"tp": %d, ...}' for one key order (every rank of a map has the same keys)."""
    return "{" + ", ".join(f"{json.dumps(k)}: %d" for k in c) + "}"


# json.dumps of one str, without its per-call set-up (the C encoder json.dumps uses)
_quote = encode_basestring_ascii
_NODE_LINE = '{"hostname": %s, "node_rank": %d, "supernode": %s, "visible_devices": %s}'
_RANK_LINE = (
    '{"rank": %d, "hostname": %s, "node_rank": %d, "local_rank": %d, "device": %d, '
    '"supernode": %s, "coords": %s, "expert_coords": %s}'
)


def _mixed_radix(dims: GridDims, world: int) -> bool:
    """True when the grid's digits run through every rank in order, first dimension fastest."""
    step = 1
    for _, stride, size in dims:
        if stride != step:
            return False
        step *= size
    return step == world


def _grid_strings(dims: GridDims) -> Iterator[str]:
    """Each rank's coordinates as compact JSON, in rank order, from the digits' product."""
    tmpl = "{" + ", ".join(f"{json.dumps(d)}: %d" for d, _, _ in dims) + "}"
    digits = product(*(range(size) for _, _, size in reversed(dims)))  # last digit fastest
    return (tmpl % t[::-1] for t in digits)


def _rank_list_lines(ranks: RankList) -> Iterator[str]:
    """Lines of a RankList, column by column (no rank objects, no per-rank Python loop)."""
    nodes, nproc = ranks.nodes, ranks.nproc
    hosts = [_quote(n.hostname) for n in nodes]
    sns = [_quote(n.supernode) for n in nodes]
    columns = zip(
        range(len(ranks)),
        chain.from_iterable(repeat(h, nproc) for h in hosts),
        chain.from_iterable(repeat(n.node_rank, nproc) for n in nodes),
        cycle(range(nproc)),
        chain.from_iterable(n.visible_devices[:nproc] for n in nodes),
        chain.from_iterable(repeat(sn, nproc) for sn in sns),
        _grid_strings(ranks.dense),
        _grid_strings(ranks.expert),
    )
    return map(_RANK_LINE.__mod__, columns)


def _node_lines(rm: RankMap) -> Iterator[str]:
    """Each node as the compact JSON of its ``rank_map_to_json`` entry."""
    devices: dict[tuple[int, ...], str] = {}  # nodes of one kind share their device order
    for n in rm.nodes:
        devs = devices.get(n.visible_devices)
        if devs is None:
            devs = devices[n.visible_devices] = json.dumps(list(n.visible_devices))
        yield _NODE_LINE % (_quote(n.hostname), n.node_rank, _quote(n.supernode), devs)


def _rank_lines(rm: RankMap) -> Iterator[str]:
    """Each rank as the compact JSON of its ``rank_map_to_json`` entry (same keys, same order)."""
    ranks = rm.ranks
    if (
        isinstance(ranks, RankList)
        and _mixed_radix(ranks.dense, len(ranks))
        and _mixed_radix(ranks.expert, len(ranks))
        and all(len(n.visible_devices) >= ranks.nproc for n in ranks.nodes)
    ):
        return _rank_list_lines(ranks)
    return _any_rank_lines(rm)


def _any_rank_lines(rm: RankMap) -> Iterator[str]:
    """Rank by rank, for any sequence of RankPlacements."""
    if not rm.ranks:
        return
    hosts = [json.dumps(n.hostname) for n in rm.nodes]  # by node rank, encoded once
    sns = [json.dumps(n.supernode) for n in rm.nodes]
    keys = tuple(rm.ranks[0].coords)
    tmpl = _coords_template(rm.ranks[0].coords)
    ekeys = tuple(rm.ranks[0].expert_coords)
    etmpl = _coords_template(rm.ranks[0].expert_coords)
    r: RankPlacement
    for r in rm.ranks:
        c, e = r.coords, r.expert_coords
        # the fallback never runs for maps built by build_rank_map; it keeps the writer exact
        coords = tmpl % tuple(c.values()) if tuple(c) == keys else json.dumps(c)
        ecoords = etmpl % tuple(e.values()) if tuple(e) == ekeys else json.dumps(e)
        n = r.node_rank
        yield (
            f'{{"rank": {r.rank}, "hostname": {hosts[n]}, "node_rank": {n}, '
            f'"local_rank": {r.local_rank}, "device": {r.device}, '
            f'"supernode": {sns[n]}, "coords": {coords}, "expert_coords": {ecoords}}}'
        )


def _write_lines(out: TextIO, lines: Iterator[str], indent: str) -> None:
    out.write("[")
    batch: list[str] = []
    first = True
    for line in lines:
        batch.append(line)
        if len(batch) == _CHUNK:
            out.write(("\n" if first else ",\n") + indent + f",\n{indent}".join(batch))
            first, batch = False, []
    if batch:
        out.write(("\n" if first else ",\n") + indent + f",\n{indent}".join(batch))
        first = False
    out.write("]" if first else "\n" + indent[:-1] + "]")


def write_plan_json(rm: RankMap, out: TextIO, extra: dict[str, Any] | None = None) -> None:
    """Write ``rank_map_to_json(rm) | extra`` as JSON to ``out`` (newline-terminated)."""
    from slurm_supernode.placement.rankmap import rank_map_to_json

    doc = rank_map_to_json(rm, ranks=False, nodes=False) | (extra or {})
    out.write("{")
    for i, (key, value) in enumerate(doc.items()):
        out.write(("\n" if i == 0 else ",\n") + f" {json.dumps(key)}: ")
        if key == "ranks" and value is None:
            _write_lines(out, _rank_lines(rm), "  ")
        elif key == "nodes" and value is None:
            _write_lines(out, _node_lines(rm), "  ")
        else:
            out.write(json.dumps(value, indent=1).replace("\n", "\n "))
    out.write("\n}\n")
