"""The site's link speeds as ``snrun bench`` last measured them, for the plan a running job is
held against (``runtime/plan_share``): per link level (node, supernode, inter: the bench's scopes
of the same names) the bus bandwidth of the newest good all_reduce run of the site at its
largest size, in place of the site's nominal ``bandwidth_GBps``; a level never measured keeps
the nominal figure, and the note says which was used.

Read once per profiler window, never per step. It reads the bench store's ``history`` view
(bench/store.py, schema 3) with the standard library, read-only: runtime and bench are
independent layers, so the ranks cannot import the store; the view is the store's read contract.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path

from slurm_supernode.site.model import LINK_LEVELS, Site

BENCH_DB_ENV = "SNRUN_BENCH_DB"
COLLECTIVE = "all_reduce"  # the bus bandwidth the planner's links mean (placement/cost.py)


def results_db(site: Site, environ: Mapping[str, str]) -> Path:
    """``$SNRUN_BENCH_DB``, else the site's ``paths.results_db``."""
    from slurm_supernode.fsutil import expand_path

    return expand_path(environ.get(BENCH_DB_ENV) or site.paths.results_db)


def newest_busbw(db: Path, site_name: str) -> dict[str, tuple[float, str, float]]:
    """level -> (busbw GB/s, run id, run time) of the newest good run measuring that scope.
    Empty where there is no database or it cannot be read."""
    if not db.is_file():
        return {}
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error:
        return {}
    try:
        rows = conn.execute(
            "SELECT scope, busbw, run_id, time FROM history WHERE site = ? AND good = 1"
            " AND wrong = 0 AND collective = ? AND busbw > 0"
            " ORDER BY time DESC, size DESC",
            (site_name, COLLECTIVE),
        ).fetchall()
    except sqlite3.Error:
        return {}
    finally:
        conn.close()
    out: dict[str, tuple[float, str, float]] = {}
    for scope, busbw, run_id, t in rows:
        if scope in LINK_LEVELS and scope not in out:  # newest run first, largest size first
            out[scope] = (float(busbw), str(run_id), float(t))
    return out


def measured_links(site: Site, environ: Mapping[str, str]) -> tuple[Site, str]:
    """(the site with measured bandwidths where the bench has them, which links were used)."""
    db = results_db(site, environ)
    measured = {k: v for k, v in newest_busbw(db, site.name).items() if k in site.links}
    if not measured:
        return site, f"links: the site's nominal (no snrun bench results of {site.name} in {db})"
    links = dict(site.links)
    said = []
    for level, (busbw, run_id, t) in sorted(measured.items()):
        links[level] = dataclasses.replace(links[level], bandwidth_GBps=busbw)
        day = time.strftime("%Y-%m-%d", time.gmtime(t))
        said.append(f"{level} {busbw:.1f} GB/s (bench run {run_id}, {day})")
    nominal = sorted(set(site.links) - set(measured))
    text = "links: measured " + ", ".join(said)
    if nominal:
        text += "; nominal " + ", ".join(nominal)
    return dataclasses.replace(site, links=links), text
