"""`snrun bench`: collective bandwidth benchmarks (argument parsing only).

- ``snrun bench run``: inside a job or under torchrun, one process per device; rank 0 prints
  the nccl-tests-like table and stores the run (``--json``, ``--db``).
- ``snrun bench report``: the latest runs against a rolling baseline; exit 3 on a regression.
- ``snrun bench submit``: a bench job over whole super nodes (``api/bench.py``).
- ``snrun bench schedule``: a nightly bench (scrontab, or a self-resubmitting job), list and
  remove (``api/schedules.py``; the arguments of both in ``cli/bench_schedule.py``).

Torch is imported only by ``run``.
"""

from __future__ import annotations

import argparse
import os
import sys

from slurm_supernode.bench.model import BACKENDS, TIMINGS
from slurm_supernode.cli.options import non_negative, number, positive, refuse_if
from slurm_supernode.errors import InputError
from slurm_supernode.user_settings import SnrunSettings

ACTIONS = ("run", "report", "submit", "schedule")


_positive_int = positive


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    _run_arguments(sub.add_parser("run", help="measure collectives (under torchrun / in a job)"))
    _report_arguments(sub.add_parser("report", help="latest runs against the rolling baseline"))

    from slurm_supernode.cli import bench_schedule

    sub_ = sub.add_parser("submit", help="submit a bench job over whole super nodes")
    bench_schedule.add_job_options(sub_)
    sub_.add_argument("--dry-run", action="store_true", help="print the script; submit nothing")
    sub_.add_argument("--parsable", action="store_true", help="print the job id only")
    sub_.add_argument("-W", "--wait", action="store_true", help="wait for the job to end")
    sched = sub.add_parser("schedule", help="nightly bench: install, list, remove")
    bench_schedule.add_schedule_arguments(sched)


def _run_arguments(run: argparse.ArgumentParser) -> None:
    """``snrun bench run``: what to measure and where the results go."""
    run.add_argument("--collectives", default="all", help="comma list or 'all' (default)")
    run.add_argument(
        "--scopes",
        default="all",
        help="node, supernode, inter (one rank per super node), world; comma list or 'all'",
    )
    run.add_argument("--sizes", help="e.g. 1K-1G (x --factor), 1K,1M,1G; default 1K-1G")
    run.add_argument("--min-bytes", help="start of the sweep (with --max-bytes)")
    run.add_argument("--max-bytes", help="end of the sweep")
    run.add_argument(
        "--factor", type=number(above=1, maximum=1024), default=2.0, help="sweep step factor (2)"
    )
    run.add_argument("--dtype", default="float32", help="float32, bfloat16, float16; comma list")
    run.add_argument("--iters", type=_positive_int, default=20, help="timed operations (20)")
    run.add_argument("--warmup", type=non_negative, default=5, help="untimed operations first (5)")
    run.add_argument("--backend", choices=BACKENDS, default="auto", help="auto: nccl on GPUs")
    run.add_argument(
        "--timing", choices=TIMINGS, default="auto", help="auto: graph on GPUs, wall on CPUs"
    )
    run.add_argument("--no-check", action="store_true", help="skip the result verification")
    run.add_argument(
        "--supernode-size",
        type=_positive_int,
        help="ranks per super node when neither SNRUN_SUPERNODE nor SLURM_TOPOLOGY_ADDR says",
    )
    run.add_argument("--site", default=None, help="site name stored with the run ($SNRUN_SITE)")
    run.add_argument("--job-id", default=None, help="job id stored with the run ($SLURM_JOB_ID)")
    run.add_argument("--json", metavar="OUT", help="write the run as JSON (rank 0)")
    run.add_argument("--db", metavar="PATH", help="append the run to this results database")
    run.add_argument("--quiet", action="store_true", help="no table on stdout")


def _report_arguments(rep: argparse.ArgumentParser) -> None:
    """``snrun bench report``: the database, thresholds and output files."""
    rep.add_argument(
        "--db", metavar="PATH", help="results database (default $SNRUN_BENCH_DB, else the site's)"
    )
    rep.add_argument(
        "--site",
        help="site name or file: only its runs, its bench thresholds and results_db "
        "(a name without a config here filters only)",
    )
    rep.add_argument("--baseline-runs", type=_positive_int, help="median of the last N good runs")
    rep.add_argument(
        "--threshold",
        type=number(above=0, below=100),
        metavar="PCT",
        help="regression below -PCT %%",
    )
    rep.add_argument(
        "--min-bytes",
        default="1M",
        help="flag regressions only at sizes >= this (default 1M: small sizes are noisy)",
    )
    rep.add_argument("--html", metavar="OUT", help="write an HTML page with plots")
    rep.add_argument("--prom", metavar="OUT", help="write a Prometheus textfile")
    rep.add_argument("--json", metavar="OUT", help="write the comparisons as JSON")


def run(args: argparse.Namespace) -> int:
    if args.action == "run":
        return _run(args)
    if args.action == "report":
        return _report(args)
    if args.action in ("submit", "schedule"):
        from slurm_supernode.cli import bench_schedule

        return bench_schedule.run_action(args)
    raise InputError(f"unknown action {args.action!r}", hint=", ".join(ACTIONS))


def config_from_args(args: argparse.Namespace, env=os.environ):
    """The ``BenchConfig`` of ``snrun bench run``'s options (pure; used by tests)."""
    from slurm_supernode.bench.measure_options import (
        parse_collectives,
        parse_dtypes,
        parse_scopes,
        parse_size,
        parse_sizes,
        size_sweep,
    )
    from slurm_supernode.bench.model import BenchConfig

    if args.sizes and (args.min_bytes or args.max_bytes):
        raise InputError("give --sizes or --min-bytes/--max-bytes, not both", where="--sizes")
    refuse_if(
        args,
        "factor",
        "--factor",
        f"steps a range of sizes, and --sizes {args.sizes} names each size"
        if args.sizes and "-" not in args.sizes
        else None,
        "give a range (--sizes 1K-1G --factor 4), or drop --factor",
    )
    if args.min_bytes or args.max_bytes:
        low = parse_size(args.min_bytes or "1K", where="--min-bytes")
        high = parse_size(args.max_bytes or "1G", where="--max-bytes")
        sizes = size_sweep(low, high, args.factor, where="--min-bytes")
    else:
        sizes = parse_sizes(args.sizes or "1K-1G", args.factor)
    if args.warmup < 0:
        raise InputError(f"{args.warmup} must be >= 0", where="--warmup")
    return BenchConfig(
        sizes=sizes,
        collectives=parse_collectives(args.collectives),
        scopes=parse_scopes(args.scopes),
        dtypes=parse_dtypes(args.dtype),
        iters=args.iters,
        warmup=args.warmup,
        backend=args.backend,
        timing=args.timing,
        check=not args.no_check,
        supernode_size=args.supernode_size,
        site=args.site if args.site is not None else SnrunSettings.from_environ(env).site or "",
        job_id=args.job_id if args.job_id is not None else _job_id(env),
    )


def _run(args: argparse.Namespace) -> int:
    from slurm_supernode.api.bench import measure, wrong_elements
    from slurm_supernode.fsutil import check_output_path

    config = config_from_args(args)
    if args.json:
        check_output_path(args.json, "--json")
    result = measure(config, json_out=args.json, db=args.db)
    if result is None:  # not rank 0
        return 0
    if not args.quiet:
        from slurm_supernode.bench.table import format_run

        sys.stdout.write(format_run(result))
        sys.stdout.flush()
    wrong = wrong_elements(result)
    if wrong:
        print(f"snrun: error: {wrong} wrong element(s) in the results", file=sys.stderr)
        return 1
    return 0


def _report(args: argparse.Namespace) -> int:
    from slurm_supernode.api.bench_report import bench_report
    from slurm_supernode.bench.report import format_reports
    from slurm_supernode.fsutil import check_output_path

    for option in ("html", "prom", "json"):
        if getattr(args, option):
            check_output_path(getattr(args, option), f"--{option}")
    if args.db and os.path.isdir(args.db):
        raise InputError(f"{args.db} is a directory", where="--db", hint="give the database file")
    report = bench_report(
        db=args.db,
        site=args.site,
        threshold_pct=args.threshold,
        baseline_runs=args.baseline_runs,
        min_bytes=args.min_bytes,
        html=args.html,
        prom=args.prom,
        json_out=args.json,
    )
    for notice in report.notices:
        print(f"snrun: {notice}", file=sys.stderr)
    sys.stdout.write(format_reports(report.reports))
    return report.exit_code


def _job_id(environ) -> str:
    from slurm_supernode.jobenv import JobEnvironment

    job_id = JobEnvironment.from_environ(environ).job_id
    return "" if job_id is None else str(job_id)
