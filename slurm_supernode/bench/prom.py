"""Prometheus series of the latest bench results (``snrun bench report --prom``).

Every series carries the run group's whole key (site, super nodes, node count, ``kind``:
bench or doctor, and ``params``: the settings), so a doctor run on the racks of a bench run,
or a bench run with other settings, is another series, never the same series twice (which
node_exporter's textfile collector refuses). The file is written by ``promfile``, which
merges these into the textfile beside what health and the doctor wrote.
"""

from __future__ import annotations

from collections.abc import Sequence

from slurm_supernode.bench.report import RunReport
from slurm_supernode.promfile import Family, Labels, Scope, family, labels, render

PREFIX = "snrun_bench_"
_METRICS = (
    ("snrun_bench_busbw_gbps", "Bus bandwidth of the latest run (GB/s, nccl-tests busbw)"),
    ("snrun_bench_baseline_busbw_gbps", "Median busbw of the baseline runs (GB/s)"),
    ("snrun_bench_latency_us", "Time per operation of the latest run (microseconds)"),
    ("snrun_bench_wrong", "Elements with wrong content in the latest run"),
    ("snrun_bench_regression", "1 when this result fails the report (regression, wrong, floor)"),
)
_RUN_METRICS = (
    ("snrun_bench_last_run_timestamp_seconds", "Start of the latest run (unix time)"),
    ("snrun_bench_failures", "Results of the latest run that fail the report"),
)


def scope(site: str | None) -> Scope:
    """What a report owns in the file: every bench series, or one site's."""
    return Scope(PREFIX, labels(site=site) if site else ())


def prom_families(reports: Sequence[RunReport]) -> list[Family]:
    """One series per (site, super nodes, nodes, kind, settings, scope, collective, dtype,
    size)."""
    rows: dict[str, list[tuple[Labels, float]]] = {n: [] for n, _ in _METRICS + _RUN_METRICS}
    for rep in reports:
        run = rep.run
        group = labels(site=run.site, supernode=run.supernode, nodes=run.nodes, kind=run.kind,
                       params=run.params)  # fmt: skip
        rows["snrun_bench_last_run_timestamp_seconds"].append((group, run.time))
        rows["snrun_bench_failures"].append((group, len(rep.failures)))
        for c in rep.comparisons:
            lab = group + labels(scope=c.scope, collective=c.collective, dtype=c.dtype,
                                 size=c.size)  # fmt: skip
            rows["snrun_bench_busbw_gbps"].append((lab, c.busbw))
            if c.baseline_busbw is not None:
                rows["snrun_bench_baseline_busbw_gbps"].append((lab, c.baseline_busbw))
            rows["snrun_bench_latency_us"].append((lab, c.latency_us))
            rows["snrun_bench_wrong"].append((lab, c.wrong))
            rows["snrun_bench_regression"].append((lab, int(c.failed)))
    return [family(name, help_text, rows[name]) for name, help_text in _METRICS + _RUN_METRICS]


def render_prom(reports: Sequence[RunReport]) -> str:
    """The report's series alone, as a textfile (``promfile.write_textfile`` merges them)."""
    return render(prom_families(reports))
