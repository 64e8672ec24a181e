"""`snrun doctor`: the six-step troubleshooting checklist (argument parsing and printing).

``api/doctor.py`` does the work: on the login node it loads the site, checks the nodes' Slurm
state, submits the doctor job on whole super nodes (or named nodes), or runs it as an
overlapping step in a running job (``--job``), waits, judges the facts it wrote
(``doctor/steps.py``) and writes the HTML page; this module prints the verdicts.
``--in-job`` is the part torchrun runs inside the allocation. Exit codes as ``snrun health``:
0 ok, 1 warn, 2 fail, 3 unknown (2 also for bad input).
"""

from __future__ import annotations

import argparse
import json
import sys

from slurm_supernode.bench.model import BACKENDS
from slurm_supernode.cli.options import add_service_job_arguments, refuse_if
from slurm_supernode.cli.submit import CONTAINER_OPTIONS, add_container_arguments, container_options
from slurm_supernode.errors import InputError


def _size(text: str) -> int:
    from slurm_supernode.bench.measure_options import parse_size

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
    add_container_arguments(p, "the doctor's checks run in the image")
    p.add_argument("--timeout", type=float, default=3600, help="seconds to wait for the job")
    p.add_argument("--html", metavar="OUT", help="HTML page (default: doctor.html in the job dir)")
    p.add_argument("--prom", metavar="OUT", help="merge the verdicts into this Prometheus textfile")
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
    *CONTAINER_OPTIONS,
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
    for dest, option in (
        ("timeout", "--timeout"),
        ("html", "--html"),
        ("prom", "--prom"),
        ("json", "--json"),
    ):
        refuse_if(
            ns,
            dest,
            option,
            ns.dry_run and "is about the report, and --dry-run only prints the job script",
            f"drop --dry-run to run the doctor, or drop {option}",
        )


def run(ns: argparse.Namespace) -> int:
    from slurm_supernode.api import doctor

    if ns.in_job:
        return doctor.run_inside(site=ns.site, db=ns.db, backend=ns.backend, size=ns.size,
                                 iters=ns.iters, checkpoint_dir=ns.checkpoint_dir)  # fmt: skip
    check_inapplicable(ns)
    if ns.prom:
        from slurm_supernode.fsutil import check_output_path

        check_output_path(ns.prom, "--prom")  # before a job is submitted
    if ns.facts:
        return _print(
            doctor.judge_facts_file(ns.facts, site=ns.site, html=ns.html, prom=ns.prom), ns
        )
    job = _doctor_job(ns)
    if ns.dry_run:
        print(doctor.plan_doctor_job(job, jobs_dir=ns.jobs_dir, in_job=ns.job).script, end="")
        return 0
    outcome = doctor.run_doctor(
        job,
        jobs_dir=ns.jobs_dir,
        in_job=ns.job,
        timeout=ns.timeout,
        html=ns.html,
        prom=ns.prom,
        progress=lambda message: print(f"snrun: {message}", file=sys.stderr),
    )
    return _print(outcome, ns)


def _doctor_job(ns: argparse.Namespace):
    from slurm_supernode.doctor.job import DoctorJob
    from slurm_supernode.hostlist import HostlistError, expand

    hosts: tuple[str, ...] = ()
    if ns.nodes:
        try:
            hosts = tuple(dict.fromkeys(expand(ns.nodes)))
        except HostlistError as exc:
            raise InputError(f"bad hostlist: {exc}", where="--nodes") from None
    return DoctorJob(
        supernodes=ns.supernodes,
        count=ns.count,
        hosts=hosts,
        nproc_per_node=ns.nproc_per_node,
        backend=ns.backend,
        size=ns.size,
        iters=ns.iters,
        db=ns.db,
        checkpoint_dir=ns.checkpoint_dir,
        time=ns.time,
        partition=ns.partition,
        profiles=tuple(ns.profile),
        site_arg=ns.site,
        container=container_options(ns),
    )


def _print(outcome, ns: argparse.Namespace) -> int:
    """The report as text (or JSON); the exit code is its status."""
    from slurm_supernode.doctor.text import format_report

    if ns.json:
        print(json.dumps(outcome.report.to_dict(), indent=1))
    else:
        sys.stdout.write(format_report(outcome.report))
        if outcome.html:
            print(f"page: {outcome.html}")
    return outcome.status
