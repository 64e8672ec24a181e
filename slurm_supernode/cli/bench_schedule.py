"""`snrun bench submit` and `snrun bench schedule`: their arguments, and the outcome printed.

The work is one call into ``api/bench.py`` (plan, submit, wait) or ``api/schedules.py``
(install, list, remove, the next run), which store and plan a typed ``BenchJob``: nothing
here submits, waits or writes the registry. No torch import.
"""

from __future__ import annotations

import argparse
import json
import sys

from slurm_supernode.bench.model import BACKENDS
from slurm_supernode.bench.submit import BenchJob
from slurm_supernode.cli.options import (
    add_service_job_arguments,
    non_negative,
    positive,
    refuse_if,
)
from slurm_supernode.cli.submit import CONTAINER_OPTIONS, add_container_arguments, container_options

# (dest, flag) of every bench job option: settings of the schedule --nightly installs.
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
    *CONTAINER_OPTIONS,
)


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
    add_container_arguments(p, "the bench in the image; default: the site's bench.container_image")


def add_schedule_arguments(p: argparse.ArgumentParser) -> None:
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--nightly", metavar="HH:MM", help="install a bench every night at HH:MM")
    what.add_argument("--list", action="store_true", help="show the schedules and their jobs")
    what.add_argument("--remove", metavar="NAME|ID", help="remove a schedule (and its jobs)")
    what.add_argument(
        "--resubmit",
        metavar="NAME",
        help="(run by the schedule's own jobs) submit its next run",
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


def bench_job(ns: argparse.Namespace) -> BenchJob:
    """The bench run the options describe (the site as given: the API resolves it)."""
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
        site_arg=ns.site,
        jobs_dir=ns.jobs_dir,
        container=container_options(ns),
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


def _notices(notices) -> None:
    for notice in notices:
        print(f"snrun: {notice}", file=sys.stderr)


def _submit(args: argparse.Namespace) -> int:
    import shlex

    from slurm_supernode.api.bench import submit_bench, wait_bench

    submission = submit_bench(bench_job(args), dry_run=args.dry_run)
    _notices(submission.notices)
    plan = submission.plan
    if submission.job_id is None:
        print(plan.script, end="")
        print("\n# --- sbatch command (dry run: nothing submitted) ---")
        print("# sbatch " + shlex.join(plan.request.sbatch_args()) + " " + str(plan.job_dir))
        return 0
    job_id = submission.job_id
    print(job_id if args.parsable else f"Submitted batch job {job_id}", flush=True)
    if not args.wait:
        return 0
    end = wait_bench(submission)
    if end.ok:
        print(f"snrun: bench job {job_id} {end.state} (exit {end.exit_code}); log {end.log}",
              file=sys.stderr)  # fmt: skip
        return 0
    print(f"snrun: error: bench job {job_id} {end.state} (exit {end.exit_code})"
          + (f": {end.cause}" if end.cause else f"; log {end.log}"), file=sys.stderr)  # fmt: skip
    return 1


# -- schedule -------------------------------------------------------------------------------
def _install(args: argparse.Namespace) -> int:
    from slurm_supernode.api.schedules import install_schedule

    done = install_schedule(
        bench_job(args), args.nightly, name=args.name, mode=args.mode, run_now=args.run_now
    )
    _notices(done.notices)
    entry = done.schedule
    if entry.mode == "scrontab":
        if done.job_id is not None:
            print(f"Submitted batch job {done.job_id} (first run, now)")
        print(f"snrun: schedule {entry.name} ({entry.id}): scrontab entry at {entry.at}")
        return 0
    when = "now" if done.begin is None else done.begin.strftime("%Y-%m-%d %H:%M")
    print(f"Submitted batch job {done.job_id} (first run: {when})")
    print(
        f"snrun: schedule {entry.name} ({entry.id}): job {entry.job_name} every night "
        f"at {entry.at}, each run submits the next"
    )
    return 0


def _resubmit(args: argparse.Namespace) -> int:
    from slurm_supernode.api.schedules import submit_next_run

    run = submit_next_run(args.resubmit, site=args.site)
    if run.schedule is None:
        print(f"snrun: schedule {run.name!r} was removed: no next run", file=sys.stderr)
    elif run.waiting is not None:  # a rerun of this job, or a second chain
        print(f"snrun: schedule {run.name}: job {run.waiting} already waits")
    elif run.begin is None:
        print(f"snrun: schedule {run.name}: job {run.job_id} submitted")
    else:
        print(
            f"snrun: schedule {run.name}: next run job {run.job_id} at {run.begin:%Y-%m-%d %H:%M}"
        )
    return 0


def _list(args: argparse.Namespace) -> int:
    from slurm_supernode.api.schedules import list_schedules

    registry, rows = list_schedules(site=args.site)
    if args.json:
        print(json.dumps([_row_dict(row) for row in rows], indent=1))
        return 0
    if not rows:
        print(f"# no bench schedules ({registry})")
        return 0
    print(f"# {'name':<16} {'id':<8} {'at':>5} {'mode':<8} jobs / options")
    for row in rows:
        entry = row.schedule
        if row.jobs is None:
            state = "(Slurm not reachable)"
        else:
            state = " ".join(
                f"{j.job_id}:{j.state}"
                + (f"@{j.start:%m-%d %H:%M}" if j.start and j.state == "PENDING" else "")
                for j in row.jobs
            ) or "-"  # fmt: skip
        print(f"  {entry.name:<16} {entry.id:<8} {entry.at:>5} {entry.mode:<8} {state}")
        print(f"  {'':<16} site {entry.site} {_spec_text(entry)}")
    return 0


def _spec_text(entry) -> str:
    """The bench options of a schedule, as one would type them (or why it cannot run)."""
    if entry.spec is None:
        return f"(old entry, not readable: {entry.unreadable}; re-install it)"
    from slurm_supernode.bench.stored_spec import spec_to_dict

    defaults = spec_to_dict(BenchJob())
    stored = spec_to_dict(entry.spec)
    return " ".join(
        f"{name}={value if not isinstance(value, list) else ','.join(value)}"
        for name, value in stored.items()
        if name != "version" and value != defaults[name]
    )


def _row_dict(row) -> dict:
    from slurm_supernode.bench.stored_spec import spec_to_dict

    entry = row.schedule
    return {
        "id": entry.id, "name": entry.name, "at": entry.at, "mode": entry.mode,
        "site": entry.site, "job_name": entry.job_name,
        "spec": None if entry.spec is None else spec_to_dict(entry.spec),
        "unreadable": entry.unreadable or None,
        "workdir": entry.workdir, "created": entry.created, "job_ids": list(entry.job_ids),
        "jobs": None if row.jobs is None else [
            {"job_id": j.job_id, "state": j.state,
             "start": j.start.isoformat() if j.start else None}
            for j in row.jobs],
    }  # fmt: skip


def _remove(args: argparse.Namespace) -> int:
    from slurm_supernode.api.schedules import remove_schedule

    gone = remove_schedule(args.remove, site=args.site)
    entry = gone.schedule
    note = (
        f"; cancelled pending job(s) {', '.join(map(str, gone.cancelled))}"
        if gone.cancelled
        else ""
    )
    print(f"snrun: removed schedule {entry.name} ({entry.id}){note}")
    return 0
