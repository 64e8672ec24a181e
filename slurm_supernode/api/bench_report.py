"""The bench report from Python: the latest runs in a results database against their rolling
baseline, with the site's thresholds, written as HTML / Prometheus text / JSON on request
(``bench/report.py`` compares; ``snrun bench report`` prints the text and exits with the code)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from slurm_supernode.api.checked import checked
from slurm_supernode.bench.measure_options import parse_size
from slurm_supernode.bench.report import Thresholds, build_reports, exit_code
from slurm_supernode.bench.store import open_store
from slurm_supernode.errors import InputError

if TYPE_CHECKING:
    from slurm_supernode.bench.report import RunReport
    from slurm_supernode.site.model import BenchSettings


@dataclass(frozen=True)
class BenchReport:
    """Each latest run compared with its baseline; ``exit_code`` 3 on a regression."""

    reports: tuple[RunReport, ...]
    db: str
    notices: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        return exit_code(self.reports)


@dataclass(frozen=True)
class ReportSite:
    """What ``--site`` gives the report: the name to filter on, thresholds and database."""

    name: str | None = None
    bench: BenchSettings | None = None
    results_db: str | None = None
    notice: str | None = None


def report_site(site_arg: str | None) -> ReportSite:
    """A site with a config here (name or file) gives its thresholds and database; a name
    without one (runs of another cluster in a shared database) only filters, with the default
    thresholds and a notice. A broken config, or a site file that is not there, is an error."""
    if not site_arg:
        return ReportSite()
    from slurm_supernode.errors import SnrunError
    from slurm_supernode.fsutil import expand_path
    from slurm_supernode.site.finder import find_site
    from slurm_supernode.site.loader import load_site

    try:
        find_site(site_arg)
    except SnrunError:
        if "/" in site_arg or site_arg.endswith((".yaml", ".yml")):
            raise  # a file that is not there: not a site name
        return ReportSite(
            site_arg, notice=f"no config for site {site_arg!r} here: default thresholds"
        )
    site = load_site(site_arg)
    return ReportSite(site.name, site.bench, str(expand_path(site.paths.results_db)))


def thresholds(
    bench: BenchSettings | None,
    *,
    threshold_pct: float | None = None,
    baseline_runs: int | None = None,
    min_bytes: str = "1M",
) -> Thresholds:
    """The options given over the site's ``BenchSettings`` over the defaults."""
    base = Thresholds()
    pct, runs = threshold_pct, baseline_runs
    floors: tuple[tuple[str, float], ...] = ()
    if bench is not None:
        pct = pct if pct is not None else bench.regression_pct
        runs = runs or bench.baseline_runs
        floors = tuple(bench.min_busbw_gbps)
    if pct is not None and not 0 < pct < 100:
        raise InputError(f"{pct} must be between 0 and 100", where="--threshold")
    return Thresholds(
        regression_pct=base.regression_pct if pct is None else pct,
        baseline_runs=runs or base.baseline_runs,
        min_bytes=parse_size(min_bytes, where="--min-bytes"),
        floors=floors,
    )


def default_db() -> str:
    """``$SNRUN_BENCH_DB``, else the default results database (``~/.snrun/bench.sqlite``)."""
    from slurm_supernode.site.model import PathSettings
    from slurm_supernode.user_settings import SnrunSettings

    return SnrunSettings.from_environ().bench_db or PathSettings().results_db


@checked
def bench_report(
    *,
    db: str | None = None,
    site: str | None = None,
    threshold_pct: float | None = None,
    baseline_runs: int | None = None,
    min_bytes: str = "1M",
    html: str | None = None,
    prom: str | None = None,
    json_out: str | None = None,
) -> BenchReport:
    """Compare the latest runs of ``db`` (default ``$SNRUN_BENCH_DB``, else the site's
    results_db, else ``~/.snrun/bench.sqlite``); only ``site``'s runs when given. Writes the
    HTML page, Prometheus textfile and JSON that are asked for."""
    from slurm_supernode.fsutil import write_atomic
    from slurm_supernode.user_settings import SnrunSettings

    chosen = report_site(site)
    db = db or SnrunSettings.from_environ().bench_db or chosen.results_db or default_db()
    limits = thresholds(chosen.bench, threshold_pct=threshold_pct, baseline_runs=baseline_runs,
                        min_bytes=min_bytes)  # fmt: skip
    with open_store(db, create=False) as store:
        reports = tuple(build_reports(store, site=chosen.name, thresholds=limits))
    if html:
        from slurm_supernode.bench.html import render_html

        write_atomic(html, render_html(reports))
    if prom:
        from slurm_supernode.bench.prom import prom_families, scope
        from slurm_supernode.promfile import write_textfile

        write_textfile(prom, prom_families(reports), scope(chosen.name))
    if json_out:
        data = [
            {"run": asdict(r.run), "comparisons": [asdict(c) for c in r.comparisons]}
            for r in reports
        ]
        write_atomic(json_out, json.dumps(data, indent=1) + "\n")
    notices = (chosen.notice,) if chosen.notice else ()
    return BenchReport(reports, db, notices)
