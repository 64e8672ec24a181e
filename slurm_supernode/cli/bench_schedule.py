"""`snrun bench submit` and `snrun bench schedule` (argument handling and the side effects).

The decisions are pure functions elsewhere (``bench/submit.py`` plans the job,
``bench/schedule.py`` computes start times and edits the registry and scrontab text); this
module wires them to the site loader, the Slurm layer and stdout. No torch import.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slurm_supernode.bench.model import BACKENDS
from slurm_supernode.cli.options import (
    add_service_job_arguments,
    non_negative,
    positive,
    refuse_if,
)
from slurm_supernode.jobenv import JobEnvironment, SnrunSettings

if TYPE_CHECKING:
    from slurm_supernode.launch.job import JobPlan

# (dest, flag) of every job option, in the order they are written back for a schedule.
_JOB_OPTIONS = (
    ("supernodes", "--supernodes"),
    ("count", "-S"),
    ("nproc_per_node", "--nproc-per-node"),
    ("sizes", "--sizes"),
    ("collectives", "--collectives"),
    ("scopes", "--scopes"),
    ("dtype", "--dtype"),
    ("iters", "--iters"),
    ("warmup", "--warmup"),
    ("backend", "--backend"),
    ("db", "--db"),
    ("time", "--time"),
    ("partition", "--partition"),
    ("profile", "--env-profile"),
    ("jobs_dir", "--jobs-dir"),
)
_DEFAULTS = {"collectives": "all", "scopes": "all", "dtype": "float32", "iters": 20,
             "warmup": 5, "backend": "auto", "profile": []}  # fmt: skip


def add_job_options(p: argparse.ArgumentParser) -> None:
    """Options of the bench job itself (shared by submit and schedule)."""
    p.add_argument("--site", help="site name or file (default $SNRUN_SITE)")
    p.add_argument("--supernodes", metavar="NAMES", help="e.g. sn0,sn1 (default: all)")
    p.add_argument("-S", dest="count", type=positive, metavar="N", help="any N whole super nodes")
    p.add_argument("--nproc-per-node", type=positive, help="processes per node (default: devices)")
    p.add_argument("--sizes", help="default: the site's bench.sizes, else 1K-1G")
    p.add_argument("--collectives", default="all", help="comma list or 'all' (default)")
    p.add_argument("--scopes", default="all", help="node, supernode, inter, world or 'all'")
    p.add_argument("--dtype", default="float32", help="float32, bfloat16, float16")
    p.add_argument("--iters", type=positive, default=20, help="timed operations (20)")
    p.add_argument("--warmup", type=non_negative, default=5, help="untimed operations first (5)")
    p.add_argument("--backend", choices=BACKENDS, default="auto")
    add_service_job_arguments(p, "bench", None)


def add_schedule_arguments(p: argparse.ArgumentParser) -> None:
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--nightly", metavar="HH:MM", help="install a bench every night at HH:MM")
    what.add_argument("--list", action="store_true", help="show the schedules and their jobs")
    what.add_argument("--remove", metavar="NAME|ID", help="remove a schedule (and its jobs)")
    what.add_argument(
        "--resubmit", metavar="NAME", help="(run by a chained job) submit the next night's run"
    )
    p.add_argument("--name", help="schedule name (default: the site's name)")
    p.add_argument(
        "--mode",
        choices=("auto", "scrontab", "chain"),
        default="auto",
        help="auto: scrontab where Slurm has it, else a job that resubmits itself",
    )
    p.add_argument("--run-now", action="store_true", help="also run the first bench right away")
    p.add_argument("--json", action="store_true", help="--list as JSON")
    add_job_options(p)


def job_option_argv(ns: argparse.Namespace) -> list[str]:
    """The job options that differ from their defaults, as argv (what a schedule replays)."""
    argv: list[str] = []
    for dest, flag in _JOB_OPTIONS:
        value = getattr(ns, dest, None)
        if value is None or value == _DEFAULTS.get(dest):
            continue
        for item in value if isinstance(value, list) else [value]:
            argv += [flag, str(item)]
    return argv


def _job_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="snrun bench submit", add_help=False, allow_abbrev=False)
    add_job_options(p)
    return p


def site_argument(value: str | None) -> str | None:
    """A site file becomes an absolute path (jobs run elsewhere); a name stays a name."""
    if value and Path(value).expanduser().is_file():
        return str(Path(value).expanduser().absolute())
    return value or SnrunSettings.from_environ().site


def bench_job(ns: argparse.Namespace, **extra):
    from slurm_supernode.bench.submit import BenchJob

    return BenchJob(
        supernodes=ns.supernodes,
        count=ns.count,
        nproc_per_node=ns.nproc_per_node,
        sizes=ns.sizes,
        collectives=ns.collectives,
        scopes=ns.scopes,
        dtype=ns.dtype,
        iters=ns.iters,
        warmup=ns.warmup,
        backend=ns.backend,
        db=ns.db,
        time=ns.time,
        partition=ns.partition,
        profiles=tuple(ns.profile),
        site_arg=site_argument(ns.site),
        **extra,
    )


def check_inapplicable(args: argparse.Namespace) -> None:
    """Options given explicitly that this action cannot honour (defaults stay silent)."""
    if args.action == "submit":
        dry = "--dry-run submits nothing" if args.dry_run else None
        refuse_if(
            args,
            "parsable",
            "--parsable",
            dry and f"prints a job id, and {dry}",
            "drop --dry-run to submit, or drop --parsable",
        )
        refuse_if(
            args,
            "wait",
            "-W/--wait",
            dry and f"waits for the job, and {dry}",
            "drop --dry-run to submit and wait, or drop -W",
        )
        return
    action = next((f for d, f in _ACTIONS if getattr(args, d)), "--nightly")
    refuse_if(
        args,
        "json",
        "--json",
        None if args.list else f"prints --list as JSON, and {action} lists nothing",
        "use --list --json, or drop --json",
    )
    if action == "--nightly":
        return
    for dest, flag in (
        *_JOB_OPTIONS,
        ("mode", "--mode"),
        ("run_now", "--run-now"),
        ("name", "--name"),
    ):
        refuse_if(
            args,
            dest,
            flag,
            f"is a setting of the schedule --nightly installs, and {action} installs none",
            f"drop {flag} (with --nightly HH:MM it applies)",
        )


_ACTIONS = (("list", "--list"), ("remove", "--remove"), ("resubmit", "--resubmit"))


def run_action(args: argparse.Namespace) -> int:
    check_inapplicable(args)
    if args.action == "submit":
        return _submit(args)
    if args.list:
        return _list(args)
    if args.remove:
        return _remove(args)
    if args.resubmit:
        return _resubmit(args)
    return _install(args)


def submit_bench(
    ns: argparse.Namespace, *, dry_run: bool = False, **extra: Any
) -> tuple[JobPlan, int]:
    """Plan and (unless ``dry_run``) submit; returns (plan, job id or 0)."""
    from slurm_supernode.bench.submit import plan_bench
    from slurm_supernode.launch.facts import gather_facts
    from slurm_supernode.launch.job import submit_job
    from slurm_supernode.launch.jobdir import jobs_root
    from slurm_supernode.site.loader import load_site

    job = bench_job(ns, **extra)
    site = load_site(job.site_arg)
    facts = gather_facts(site, required=not dry_run)
    root = jobs_root(ns.jobs_dir, site_jobs_dir=site.paths.jobs_dir)
    plan = plan_bench(site, job, facts, jobs_root=root)
    for notice in plan.request.notices:
        print(f"snrun: {notice}", file=sys.stderr)
    if dry_run:
        return plan, 0
    return plan, submit_job(plan)


def _submit(args: argparse.Namespace) -> int:
    import shlex

    plan, job_id = submit_bench(args, dry_run=args.dry_run)
    if args.dry_run:
        print(plan.script, end="")
        print("\n# --- sbatch command (dry run: nothing submitted) ---")
        print("# sbatch " + shlex.join(plan.request.sbatch_args()) + " " + str(plan.job_dir))
        return 0
    print(job_id if args.parsable else f"Submitted batch job {job_id}", flush=True)
    if not args.wait:
        return 0
    from slurm_supernode.slurm import jobs

    info = jobs.wait_for(job_id, (), timeout=7 * 86400, poll=2)
    log = plan.job_dir / "logs" / f"slurm-{job_id}.out"
    ok = info.state.base == "COMPLETED" and info.exit_code == 0
    if ok:
        print(f"snrun: bench job {job_id} {info.state} (exit {info.exit_code}); log {log}",
              file=sys.stderr)  # fmt: skip
        return 0
    from slurm_supernode.forensics.report import last_failure

    cause = last_failure(plan.job_dir)
    print(f"snrun: error: bench job {job_id} {info.state} (exit {info.exit_code})"
          + (f": {cause}" if cause else f"; log {log}"), file=sys.stderr)  # fmt: skip
    return 1


# -- schedule -------------------------------------------------------------------------------
def _site_and_registry(args: argparse.Namespace):
    from slurm_supernode.bench.schedule import registry_path
    from slurm_supernode.site.loader import load_site

    site = load_site(site_argument(args.site))
    return site, registry_path(site.paths.state_dir)


def _install(args: argparse.Namespace) -> int:
    from slurm_supernode.bench import schedule as sch
    from slurm_supernode.slurm.version import detect_features

    hour, minute = sch.parse_hhmm(args.nightly)
    site, registry = _site_and_registry(args)
    mode = args.mode
    if mode != "chain":
        feats = detect_features()
        mode, notice = sch.choose_mode(mode, feats.has_scrontab, feats.scrontab_why_not)
        if notice:
            print(f"snrun: {notice}", file=sys.stderr)
    site_arg = site_argument(args.site) or site.name
    entry = sch.new_schedule(
        args.name or site.name,
        f"{hour:02d}:{minute:02d}",
        mode,
        site_arg,
        job_option_argv(args),
        os.getcwd(),
    )
    sch.update_schedules(registry, lambda es: sch.add_schedule(es, entry))
    try:
        if mode == "scrontab":
            _install_scron(entry, site)
            if args.run_now:
                _, job_id = submit_bench(args, job_name=entry.job_name)
                print(f"Submitted batch job {job_id} (first run, now)")
            print(f"snrun: schedule {entry.name} ({entry.id}): scrontab entry at {entry.at}")
        else:
            begin = None if args.run_now else sch.next_run(datetime.now(), hour, minute)
            job_id = _submit_chained(entry, begin)
            when = "now" if begin is None else begin.strftime("%Y-%m-%d %H:%M")
            print(f"Submitted batch job {job_id} (first run: {when})")
            print(
                f"snrun: schedule {entry.name} ({entry.id}): job {entry.job_name} every night "
                f"at {entry.at}, each run submits the next"
            )
    except BaseException:
        sch.update_schedules(registry, lambda es: [e for e in es if e.id != entry.id])
        raise
    return 0


def _install_scron(entry, site) -> None:
    from slurm_supernode.bench import schedule as sch
    from slurm_supernode.slurm.scrontab import read_scrontab, write_scrontab

    command = [sys.executable, "-m", "slurm_supernode", "bench", "submit", "--site", entry.site,
               *entry.submit_args]  # fmt: skip
    options = ["--time=00:10:00"]
    if site.slurm.partition:
        options.append(f"--partition={site.slurm.partition}")
    text = read_scrontab()
    if entry.name in sch.scron_names(text):
        text = sch.remove_scron(text, entry.name)
    write_scrontab(sch.add_scron(text, sch.scron_block(entry, command, options)))


def _submit_chained(entry, begin: datetime | None) -> int:
    """Submit one run of a chain schedule (``begin`` None: now) and record its job id."""
    from slurm_supernode.bench import schedule as sch

    ns = _job_parser().parse_args([*entry.submit_args, "--site", entry.site])
    extra = {"job_name": entry.job_name, "schedule": entry.name, "workdir": entry.workdir or None}
    if begin is not None:
        extra["begin"] = begin.strftime("%Y-%m-%dT%H:%M:%S")
    _, job_id = submit_bench(ns, **extra)
    _, registry = _site_and_registry(ns)
    sch.update_schedules(registry, lambda es: sch.record_job(es, entry.name, job_id))
    return job_id


def _resubmit(args: argparse.Namespace) -> int:
    from slurm_supernode.bench import schedule as sch
    from slurm_supernode.slurm import job_lookup

    _, registry = _site_and_registry(args)
    entry = sch.find_schedule(sch.load_schedules(registry), args.resubmit)
    if entry is None:
        print(f"snrun: schedule {args.resubmit!r} was removed: no next run", file=sys.stderr)
        return 0
    me = str(JobEnvironment.from_environ().job_id or "")
    waiting = [
        j for j in job_lookup.jobs_named(entry.job_name) if j.pending and str(j.job_id) != me
    ]
    if waiting:  # a rerun of this job, or a second chain: one waiting successor is enough
        print(f"snrun: schedule {entry.name}: job {waiting[0].job_id} already waits")
        return 0
    hour, minute = sch.parse_hhmm(entry.at)
    begin = sch.next_run(datetime.now(), hour, minute)
    job_id = _submit_chained(entry, begin)
    print(f"snrun: schedule {entry.name}: next run job {job_id} at {begin:%Y-%m-%d %H:%M}")
    return 0


def _list(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from slurm_supernode.bench import schedule as sch
    from slurm_supernode.errors import SlurmError
    from slurm_supernode.slurm import job_lookup

    _, registry = _site_and_registry(args)
    rows = []
    for entry in sch.load_schedules(registry):
        try:
            queued = [
                (j.job_id, str(j.state), j.start_time)
                for j in job_lookup.jobs_named(entry.job_name)
            ]
        except SlurmError:
            queued = None
        rows.append((entry, queued))
    if args.json:
        data = [
            {**asdict(e), "job_name": e.job_name,
             "jobs": None if q is None else [
                 {"job_id": i, "state": s, "start": t.isoformat() if t else None}
                 for i, s, t in q]}
            for e, q in rows
        ]  # fmt: skip
        print(json.dumps(data, indent=1))
        return 0
    if not rows:
        print(f"# no bench schedules ({registry})")
        return 0
    print(f"# {'name':<16} {'id':<8} {'at':>5} {'mode':<8} jobs / options")
    for entry, queued in rows:
        if queued is None:
            state = "(Slurm not reachable)"
        else:
            state = (
                " ".join(
                    f"{i}:{s}" + (f"@{t:%m-%d %H:%M}" if t and s == "PENDING" else "")
                    for i, s, t in queued
                )
                or "-"
            )
        print(f"  {entry.name:<16} {entry.id:<8} {entry.at:>5} {entry.mode:<8} {state}")
        print(f"  {'':<16} site {entry.site} {' '.join(entry.submit_args)}")
    return 0


def _remove(args: argparse.Namespace) -> int:
    from slurm_supernode.bench import schedule as sch
    from slurm_supernode.slurm import job_lookup, jobs

    _, registry = _site_and_registry(args)
    removed: list = []

    def change(entries):
        rest, entry = sch.remove_schedule(entries, args.remove)
        removed.append(entry)
        return rest

    sch.update_schedules(registry, change)
    entry = removed[0]
    if entry.mode == "scrontab":
        from slurm_supernode.slurm.scrontab import read_scrontab, write_scrontab

        text = read_scrontab()
        if entry.name in sch.scron_names(text):
            write_scrontab(sch.remove_scron(text, entry.name))
    cancelled = []
    for job in job_lookup.jobs_named(entry.job_name):
        if job.pending:  # a running bench finishes; it finds no schedule to continue
            jobs.cancel(job.job_id)
            cancelled.append(job.job_id)
    note = f"; cancelled pending job(s) {', '.join(map(str, cancelled))}" if cancelled else ""
    print(f"snrun: removed schedule {entry.name} ({entry.id}){note}")
    return 0
