"""``snrun bench report``: the site's thresholds and database, the CLI options over them,
and the report written as text, HTML, Prometheus text and JSON (bench/report.py compares)."""

from __future__ import annotations

import sys

from slurm_supernode.bench.report import Thresholds, build_reports, exit_code, format_reports
from slurm_supernode.bench.store import open_store
from slurm_supernode.bench.sweep import parse_size
from slurm_supernode.errors import InputError


def report_site(site_arg: str | None):
    """(site name to filter on, its ``BenchSettings``, its results_db) for ``--site``.

    A site with a config here (name or file, through the site loader) gives its thresholds
    and database; a name without one (runs of another cluster in a shared database) only
    filters, with the default thresholds and a notice. A broken config is an error.
    """
    if not site_arg:
        return None, None, None
    from slurm_supernode.errors import SnrunError
    from slurm_supernode.site.finder import find_site
    from slurm_supernode.site.loader import load_site

    try:
        find_site(site_arg)
    except SnrunError:
        if "/" in site_arg or site_arg.endswith((".yaml", ".yml")):
            raise  # a file that is not there: not a site name
        print(
            f"snrun: no config for site {site_arg!r} here: default thresholds",
            file=sys.stderr,
        )
        return site_arg, None, None
    site = load_site(site_arg)
    from slurm_supernode.fsutil import expand_path

    return site.name, site.bench, str(expand_path(site.paths.results_db))


def thresholds_from(args, bench=None) -> Thresholds:
    """CLI options over the site's ``BenchSettings`` over the defaults."""
    base = Thresholds()
    pct = args.threshold if args.threshold is not None else None
    runs = args.baseline_runs
    if bench is not None:
        pct = pct if pct is not None else bench.regression_pct
        runs = runs or bench.baseline_runs
        floors = tuple(bench.min_busbw_gbps)
    else:
        floors = ()
    if pct is not None and not 0 < pct < 100:
        raise InputError(f"{pct} must be between 0 and 100", where="--threshold")
    return Thresholds(
        regression_pct=base.regression_pct if pct is None else pct,
        baseline_runs=runs or base.baseline_runs,
        min_bytes=parse_size(args.min_bytes, where="--min-bytes"),
        floors=floors,
    )


def main_report(args, *, db: str, site: str | None = None, bench=None) -> int:
    """``snrun bench report``: print, write the HTML/prom/JSON files, return the exit code."""
    import json
    from dataclasses import asdict

    from slurm_supernode.fsutil import write_atomic

    thresholds = thresholds_from(args, bench)
    with open_store(db, create=False) as store:
        reports = build_reports(store, site=site, thresholds=thresholds)
    sys.stdout.write(format_reports(reports))
    if args.html:
        from slurm_supernode.bench.html import render_html

        write_atomic(args.html, render_html(reports))
    if args.prom:
        from slurm_supernode.bench.prom import render_prom

        write_atomic(args.prom, render_prom(reports))
    if args.json:
        data = [
            {"run": asdict(r.run), "comparisons": [asdict(c) for c in r.comparisons]}
            for r in reports
        ]
        write_atomic(args.json, json.dumps(data, indent=1) + "\n")
    return exit_code(reports)
