"""The nccl-tests-like text table rank 0 prints after a run.

Same columns and units as ``all_reduce_perf`` (out-of-place half only), one block per
scope, dtype and collective, each with its ``# Avg bus bandwidth`` footer, so people who
read nccl-tests output can read this one without a legend.
"""

from __future__ import annotations

from slurm_supernode.bench.collectives import redop
from slurm_supernode.bench.model import BenchRun

_HEAD = "#{:>11}  {:>12}  {:>8}  {:>6}  {:>10}  {:>8}  {:>8}  {:>7}"
_ROW = "{:>12}  {:>12}  {:>8}  {:>6}  {:>10.2f}  {:>8.2f}  {:>8.2f}  {:>7}"


def format_run(run: BenchRun) -> str:
    """The whole table of a run, with a header naming where and how it was measured."""
    lines = [
        f"# snrun bench: run {run.run_id[:12]}  site {run.site or '-'}  "
        f"super nodes {run.supernode or 'unknown'}  nodes {run.nodes}  ranks {run.world_size}",
        f"# backend {run.backend} ({run.versions.comm})  torch {run.versions.torch}  "
        f"driver {run.versions.driver or '-'}  timing {run.timing}",
    ]
    blocks: dict[tuple[str, str, str], list] = {}
    for res in run.results:
        blocks.setdefault((res.scope, res.dtype, res.collective), []).append(res)
    if not blocks:
        lines.append("# no results: no scope had groups of two or more ranks")
    for (scope, _dtype, coll), rows in blocks.items():
        rows.sort(key=lambda r: r.size)
        first = rows[0]
        lines += [
            "#",
            f"# {coll}  scope {scope}: {first.groups} group(s) of {first.group_size} rank(s)",
            _HEAD.format("size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong"),
            _HEAD.format("(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", ""),
        ]
        for r in rows:
            lines.append(
                _ROW.format(
                    r.size, r.count, r.dtype, redop(coll), r.time_us, r.algbw, r.busbw, r.wrong
                )
            )
        avg = sum(r.busbw for r in rows) / len(rows)
        wrong = sum(r.wrong for r in rows)
        lines.append(f"# Out of bounds values : {wrong} {'OK' if wrong == 0 else 'FAILED'}")
        lines.append(f"# Avg bus bandwidth    : {avg:.3f}")
    return "\n".join(lines) + "\n"
