"""`snrun doctor`: the six-step troubleshooting checklist (argument parsing and wiring).

On the login node: load the site, check the nodes' Slurm state, submit the doctor job on
whole super nodes (or named nodes), or run it as an overlapping step in a running job
(``--job``), wait, judge the facts it wrote (``doctor/steps.py``), print the verdicts, write
the HTML page. ``--in-job`` is the part torchrun runs inside the allocation. Exit codes as
``snrun health``: 0 ok, 1 warn, 2 fail, 3 unknown (2 also for bad input).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from slurm_supernode.bench.model import BACKENDS
from slurm_supernode.cli.options import add_service_job_arguments, refuse_if
from slurm_supernode.errors import InputError, JobError
from slurm_supernode.jobenv import JobEnvironment, SnrunSettings


def _size(text: str) -> int:
    from slurm_supernode.bench.sweep import parse_size

    try:
        return parse_size(text, where="--size")
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Check a super node the way the field does, in order: device baseline, intra-node, "
        "cross-node (naming the slow node or pair), bandwidth vs the site's links, topology "
        "mapping, storage."
    )
    p.add_argument("--site", help="site name or file (default $SNRUN_SITE)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("-S", dest="count", type=_positive, metavar="N", help="any N super nodes")
    where.add_argument("--supernodes", metavar="NAMES", help="e.g. sn0,sn1 (default: all)")
    where.add_argument("--nodes", metavar="LIST", help="these nodes (hostlist), e.g. n[4-5]")
    where.add_argument("--job", type=_positive, metavar="JOB", help="inside running job JOB")
    where.add_argument("--facts", metavar="FILE", help="judge a facts file again (no job)")
    p.add_argument("--nproc-per-node", type=_positive, help="default: the node's devices")
    p.add_argument("--backend", choices=BACKENDS, default="auto", help="auto: nccl on GPUs")
    p.add_argument("--size", type=_size, help="largest all-reduce (default: site doctor.size)")
    p.add_argument("--iters", type=_positive, help="timed all-reduces per size")
    p.add_argument("--checkpoint-dir", help="also test this directory (site doctor.checkpoint_dir)")
    add_service_job_arguments(p, "doctor", "00:30:00")
    p.add_argument("--timeout", type=float, default=3600, help="seconds to wait for the job")
    p.add_argument("--html", metavar="OUT", help="HTML page (default: doctor.html in the job dir)")
    p.add_argument("--dry-run", action="store_true", help="print the job script; submit nothing")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--in-job", action="store_true", help=argparse.SUPPRESS)


# Options of the doctor job itself: they cannot apply when no job is made (--facts).
_JOB_OPTIONS = (
    ("nproc_per_node", "--nproc-per-node"),
    ("backend", "--backend"),
    ("size", "--size"),
    ("iters", "--iters"),
    ("checkpoint_dir", "--checkpoint-dir"),
    ("db", "--db"),
    ("time", "-t/--time"),
    ("partition", "-p/--partition"),
    ("profile", "--env-profile"),
    ("jobs_dir", "--jobs-dir"),
    ("timeout", "--timeout"),
    ("dry_run", "--dry-run"),
)


def check_inapplicable(ns: argparse.Namespace) -> None:
    """Options given explicitly that this run cannot honour (defaults stay silent)."""
    for dest, option in _JOB_OPTIONS:
        refuse_if(
            ns,
            dest,
            option,
            ns.facts
            and "is a setting of the doctor job, and --facts judges a facts file again without one",
            f"drop {option} with --facts",
        )
    for dest, option in (("time", "-t/--time"), ("partition", "-p/--partition")):
        refuse_if(
            ns,
            dest,
            option,
            ns.job and f"is a setting of a new allocation, and --job {ns.job} runs in that job's",
            f"drop {option} with --job",
        )
    for dest, option in (("timeout", "--timeout"), ("html", "--html"), ("json", "--json")):
        refuse_if(
            ns,
            dest,
            option,
            ns.dry_run and "is about the report, and --dry-run only prints the job script",
            f"drop --dry-run to run the doctor, or drop {option}",
        )


def run(ns: argparse.Namespace) -> int:
    if ns.in_job:
        return _in_job(ns)
    check_inapplicable(ns)
    from slurm_supernode.cli.bench_schedule import site_argument
    from slurm_supernode.site.loader import load_site

    site_arg = site_argument(ns.site)
    site = load_site(site_arg)
    if ns.facts:
        return _judge(site, _read_facts(Path(ns.facts)), ns, job_dir=None)
    job = _doctor_job(ns, site, site_arg)
    from slurm_supernode.doctor.job import FACTS_FILE, plan_doctor
    from slurm_supernode.launch.facts import gather_facts
    from slurm_supernode.launch.jobdir import jobs_root

    root = jobs_root(ns.jobs_dir, site_jobs_dir=site.paths.jobs_dir)
    facts = gather_facts(site, required=not ns.dry_run)
    plan = plan_doctor(site, job, facts, jobs_root=root)
    if ns.dry_run:
        print(plan.script, end="")
        return 0
    before = _login_findings(site, job.hosts)
    if ns.job:
        from slurm_supernode.doctor.job import run_in_job

        print(f"snrun: doctor step in job {ns.job} on {len(job.hosts)} node(s)", file=sys.stderr)
        code = run_in_job(plan, ns.job, job.hosts, ns.timeout)
        job_id = ns.job
        state = f"step exit {code}"
    else:
        from slurm_supernode.launch.job import submit_job
        from slurm_supernode.slurm import jobs

        job_id = submit_job(plan)
        print(f"snrun: doctor job {job_id} submitted; waiting ({plan.job_dir})", file=sys.stderr)
        info = jobs.wait_for(job_id, (), timeout=ns.timeout, poll=2)
        state = f"{info.state} exit {info.exit_code}"
    path = plan.job_dir / FACTS_FILE
    if not path.exists():
        from slurm_supernode.forensics.report import last_failure

        cause = last_failure(plan.job_dir)
        raise JobError(
            f"doctor job {job_id} ended ({state}) without results"
            + (f": {cause}" if cause else ""),
            hint=f"its log: {plan.job_dir / 'logs'}",
        )
    return _judge(site, _read_facts(path), ns, job_dir=plan.job_dir, extra=before)


def _doctor_job(ns: argparse.Namespace, site, site_arg):
    from slurm_supernode.doctor.job import DoctorJob
    from slurm_supernode.hostlist import HostlistError, expand

    hosts: tuple[str, ...] = ()
    if ns.nodes:
        try:
            hosts = tuple(dict.fromkeys(expand(ns.nodes)))
        except HostlistError as exc:
            raise InputError(f"bad hostlist: {exc}", where="--nodes") from None
    if ns.job:
        from slurm_supernode.slurm import job_lookup

        info = job_lookup.job_info(ns.job)
        if info is None or not info.running or not info.nodelist:
            state = "unknown to Slurm" if info is None else info.state
            raise InputError(
                f"job {ns.job} is {state}, not running", where="--job", hint="squeue --me"
            )
        hosts = tuple(expand(info.nodelist))
    return DoctorJob(
        supernodes=ns.supernodes,
        count=ns.count,
        hosts=hosts,
        nproc_per_node=ns.nproc_per_node,
        backend=ns.backend,
        size=ns.size,
        iters=ns.iters,
        db=ns.db or SnrunSettings.from_environ().bench_db,
        checkpoint_dir=ns.checkpoint_dir,
        time=ns.time,
        partition=ns.partition,
        profiles=tuple(ns.profile),
        site_arg=site_arg,
    )


def _login_findings(site, hosts: tuple[str, ...]) -> list:
    """What needs no allocation: Slurm's view of the named nodes (drained, down)."""
    from slurm_supernode.doctor.model import Finding
    from slurm_supernode.health.checks import CRITICAL, OK
    from slurm_supernode.hostlist import fold
    from slurm_supernode.slurm import nodes

    if not hosts:
        return []
    infos = nodes.node_infos(list(hosts))
    bad = [i for i in infos if i.drained or "DOWN" in (i.state or "").upper()]
    out = [
        Finding(
            "device",
            "slurm",
            CRITICAL,
            f"{i.state}: {i.reason or 'no reason'}",
            expected="IDLE/ALLOCATED/MIXED",
            where=i.name,
            next=f"scontrol show node {i.name}; snrun health --node {i.name}",
        )
        for i in bad
    ]
    if not bad:
        out.append(Finding("device", "slurm", OK, "no node drained or down", where=fold(hosts)))
    return out


def _read_facts(path: Path):
    from slurm_supernode.doctor.model import DoctorFacts

    try:
        data = json.loads(path.read_text())
        return DoctorFacts.from_dict(data)
    except OSError as exc:
        raise InputError(f"cannot read it: {exc.strerror}", where=str(path)) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"not a doctor facts file ({exc})", where=str(path)) from None


def _judge(site, facts, ns, *, job_dir: Path | None, extra=()) -> int:
    from slurm_supernode.doctor.html import render_html
    from slurm_supernode.doctor.steps import evaluate
    from slurm_supernode.doctor.text import format_report
    from slurm_supernode.fsutil import write_atomic

    report = evaluate(site, facts, extra=extra)
    html_path = ns.html or (str(job_dir / "doctor.html") if job_dir else None)
    if html_path:
        try:
            write_atomic(html_path, render_html(report, facts, slow_pct=site.doctor.slow_pct))
            write_atomic(
                Path(html_path).with_suffix(".json"), json.dumps(report.to_dict(), indent=1)
            )
        except OSError as exc:
            raise InputError(f"cannot write {html_path}: {exc.strerror}", where="--html") from None
    if ns.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        sys.stdout.write(format_report(report))
        if html_path:
            print(f"page: {html_path}")
    status = report.status
    return status if status > 0 else 0


def _in_job(ns: argparse.Namespace) -> int:
    from slurm_supernode.doctor.inside import InsideOptions, run_inside
    from slurm_supernode.site.loader import load_site

    settings = SnrunSettings.from_environ()
    job_dir = settings.job_dir
    site_file = settings.site_file or ns.site
    if not job_dir or not site_file:
        raise InputError(
            "--in-job runs inside a doctor job (SNRUN_JOB_DIR, SNRUN_SITE_FILE)",
            where="--in-job",
            hint="snrun doctor --site S",
        )
    site = load_site(site_file)
    paths = [job_dir]
    if ns.checkpoint_dir:
        paths.append(ns.checkpoint_dir)
    from slurm_supernode.doctor.job import FACTS_FILE

    opts = InsideOptions(
        out=str(Path(job_dir) / FACTS_FILE),
        db=ns.db,
        backend=ns.backend,
        size=ns.size,
        iters=ns.iters,
        storage_paths=tuple(paths),
        job_id=str(JobEnvironment.from_environ().job_id or ""),
    )
    return run_inside(site, opts)
