"""Prometheus textfile (node_exporter's textfile collector) of the latest bench results.

Written atomically by the caller (temp file + rename), as the collector requires, so a
scrape never reads half a file. Gauges only; label values escaped per the exposition format.
"""

from __future__ import annotations

from collections.abc import Sequence

from slurm_supernode.bench.report import RunReport


def escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**labels) -> str:
    return "{" + ",".join(f'{k}="{escape_label(str(v))}"' for k, v in labels.items()) + "}"


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


def render_prom(reports: Sequence[RunReport]) -> str:
    """The textfile: one series per (site, super nodes, nodes, scope, collective, dtype, size)."""
    samples: dict[str, list[str]] = {name: [] for name, _ in _METRICS + _RUN_METRICS}
    for rep in reports:
        run = rep.run
        group = {"site": run.site, "supernode": run.supernode, "nodes": run.nodes}
        samples["snrun_bench_last_run_timestamp_seconds"].append(
            f"snrun_bench_last_run_timestamp_seconds{_labels(**group)} {run.time:.3f}"
        )
        samples["snrun_bench_failures"].append(
            f"snrun_bench_failures{_labels(**group)} {len(rep.failures)}"
        )
        for c in rep.comparisons:
            labels = _labels(**group, scope=c.scope, collective=c.collective, dtype=c.dtype,
                             size=c.size)  # fmt: skip
            samples["snrun_bench_busbw_gbps"].append(
                f"snrun_bench_busbw_gbps{labels} {c.busbw:.6g}"
            )
            if c.baseline_busbw is not None:
                samples["snrun_bench_baseline_busbw_gbps"].append(
                    f"snrun_bench_baseline_busbw_gbps{labels} {c.baseline_busbw:.6g}"
                )
            samples["snrun_bench_latency_us"].append(
                f"snrun_bench_latency_us{labels} {c.latency_us:.6g}"
            )
            samples["snrun_bench_wrong"].append(f"snrun_bench_wrong{labels} {c.wrong}")
            samples["snrun_bench_regression"].append(
                f"snrun_bench_regression{labels} {int(c.failed)}"
            )
    lines = []
    for name, help_text in _METRICS + _RUN_METRICS:
        if samples[name]:
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", *samples[name]]
    return "\n".join(lines) + "\n" if lines else ""
