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
from typing import TextIO

from slurm_supernode.placement.model import RankMap, RankPlacement

_CHUNK = 4096  # lines per write: few write calls, bounded extra memory


def _coords_template(c: dict[str, int]) -> str:
    """'{"tp": %d, ...}' for one key order (every rank of a map has the same keys)."""
    return "{" + ", ".join(f"{json.dumps(k)}: %d" for k in c) + "}"


def _rank_lines(rm: RankMap) -> Iterator[str]:
    """Each rank as the compact JSON of its ``rank_map_to_json`` entry (same keys, same order)."""
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


def write_plan_json(rm: RankMap, out: TextIO, extra: dict | None = None) -> None:
    """Write ``rank_map_to_json(rm) | extra`` as JSON to ``out`` (newline-terminated)."""
    from slurm_supernode.placement.rankmap import rank_map_to_json

    doc = rank_map_to_json(rm, ranks=False) | (extra or {})
    out.write("{")
    for i, (key, value) in enumerate(doc.items()):
        out.write(("\n" if i == 0 else ",\n") + f" {json.dumps(key)}: ")
        if key == "ranks" and value is None:
            _write_lines(out, _rank_lines(rm), "  ")
        elif key == "nodes" and isinstance(value, list):
            _write_lines(out, map(json.dumps, value), "  ")
        else:
            out.write(json.dumps(value, indent=1).replace("\n", "\n "))
    out.write("\n}\n")
