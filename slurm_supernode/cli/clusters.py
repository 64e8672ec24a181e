"""`snrun clusters`: the clusters named in clusters.yaml, each checked (reachable, its snrun
and Slurm versions) unless --no-check."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "List the clusters of `snrun --cluster NAME` (from $XDG_CONFIG_HOME/snrun/clusters.yaml "
        "or $SNRUN_CLUSTERS_FILE) and check each: reachable over SSH, snrun and Slurm versions."
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="only these clusters")
    p.add_argument("--no-check", action="store_true", help="list only; connect to none")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")


def run(ns: argparse.Namespace) -> int:
    import json

    from slurm_supernode.api.remote_clusters import check_clusters

    path, rows = check_clusters(ns.names, check=not ns.no_check)
    if ns.json:
        print(json.dumps([r.to_dict() for r in rows], indent=2))
    else:
        print(f"# {path}")
        header = ("NAME", "DESTINATION", "STATE", "SNRUN", "SLURM")
        table = [header] + [r.cells() for r in rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
        for row in table:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1])
        for r in rows:
            if r.problem:
                print(f"{r.name}: {r.problem}")
    return 1 if any(r.problem for r in rows) else 0
