"""The doctor from Python: submit its job (or a step in a running job), wait, judge the facts
it wrote, write the HTML page; or judge a facts file again. ``snrun doctor`` parses its
arguments and calls these; it only prints the outcome."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from slurm_supernode.api.checked import checked
from slurm_supernode.api.site_ref import site_argument
from slurm_supernode.doctor.job import DoctorJob
from slurm_supernode.errors import InputError, JobError
from slurm_supernode.user_settings import SnrunSettings

if TYPE_CHECKING:
    from slurm_supernode.doctor.model import DoctorFacts, DoctorReport, Finding
    from slurm_supernode.launch.job import JobPlan
    from slurm_supernode.site.model import Site

Progress = Callable[[str], None]


@dataclass(frozen=True)
class DoctorOutcome:
    """The judged report, the facts it was judged from, and where it came from / went."""

    report: DoctorReport
    facts: DoctorFacts
    job_id: int | None = None  # the doctor job, or the running job it stepped into
    job_dir: Path | None = None
    html: str | None = None  # the page written (and its .json beside it)

    @property
    def status(self) -> int:
        """0 ok, 1 warn, 2 fail, 3 unknown (``snrun health``'s codes)."""
        return max(self.report.status, 0)


def _quiet(_message: str) -> None:
    pass


def in_running_job(job: DoctorJob, job_id: int) -> DoctorJob:
    """``job`` on the nodes of running job ``job_id`` (an InputError if it is not running)."""
    from slurm_supernode.hostlist import expand
    from slurm_supernode.slurm import job_lookup

    info = job_lookup.job_info(job_id)
    if info is None or not info.running or not info.nodelist:
        state = "unknown to Slurm" if info is None else info.state
        raise InputError(f"job {job_id} is {state}, not running", where="--job", hint="squeue --me")
    return dataclasses.replace(job, hosts=tuple(expand(info.nodelist)))


def _prepared(
    job: DoctorJob, jobs_dir: str | None, in_job: int | None, dry_run: bool
) -> tuple[Site, DoctorJob, JobPlan]:
    from slurm_supernode.doctor.job import plan_doctor
    from slurm_supernode.launch.facts import gather_facts
    from slurm_supernode.launch.jobdir import jobs_root
    from slurm_supernode.site.loader import load_site

    job = dataclasses.replace(
        job,
        site_arg=site_argument(job.site_arg),
        db=job.db or SnrunSettings.from_environ().bench_db,
    )
    site = load_site(job.site_arg)
    if in_job is not None:
        job = in_running_job(job, in_job)
    root = jobs_root(jobs_dir, site_jobs_dir=site.paths.jobs_dir)
    wants_container = job.container.image is not None  # the runtimes are asked only then
    facts = gather_facts(site, required=not dry_run, containers=wants_container)
    return site, job, plan_doctor(site, job, facts, jobs_root=root)


@checked
def plan_doctor_job(
    job: DoctorJob, *, jobs_dir: str | None = None, in_job: int | None = None
) -> JobPlan:
    """The doctor job's plan (its script is what ``--dry-run`` prints); submits nothing."""
    return _prepared(job, jobs_dir, in_job, dry_run=True)[2]


@checked
def run_doctor(
    job: DoctorJob,
    *,
    jobs_dir: str | None = None,
    in_job: int | None = None,
    timeout: float = 3600.0,
    html: str | None = None,
    progress: Progress = _quiet,
    prom: str | None = None,
) -> DoctorOutcome:
    """Submit the doctor job (or, with ``in_job``, run it as an overlapping step of that
    running job), wait up to ``timeout`` s, judge its facts and write the page (``html``,
    default ``doctor.html`` in the job directory). JobError if it wrote no facts."""
    from slurm_supernode.doctor.job import FACTS_FILE

    site, job, plan = _prepared(job, jobs_dir, in_job, dry_run=False)
    before = login_findings(job.hosts)
    if in_job is not None:
        from slurm_supernode.doctor.job import run_in_job

        progress(f"doctor step in job {in_job} on {len(job.hosts)} node(s)")
        code = run_in_job(plan, in_job, job.hosts, timeout)
        job_id, state = in_job, f"step exit {code}"
    else:
        from slurm_supernode.launch.job import submit_job
        from slurm_supernode.slurm import jobs

        job_id = submit_job(plan)
        progress(f"doctor job {job_id} submitted; waiting ({plan.job_dir})")
        info = jobs.wait_for(job_id, (), timeout=timeout, poll=2)
        state = f"{info.state} exit {info.exit_code}"
    path = plan.job_dir / FACTS_FILE
    if not path.exists():
        from slurm_supernode.chain.ledger import rank_failures
        from slurm_supernode.forensics.report import last_failure

        cause = last_failure(plan.job_dir, rank_failures(plan.job_dir))
        raise JobError(
            f"doctor job {job_id} ended ({state}) without results"
            + (f": {cause}" if cause else ""),
            hint=f"its log: {plan.job_dir / 'logs'}",
        )
    page = html or str(plan.job_dir / "doctor.html")
    outcome = judge(site, read_facts(path), extra=before, html=page, prom=prom)
    return dataclasses.replace(outcome, job_id=job_id, job_dir=plan.job_dir)


@checked
def judge_facts_file(
    path: str, *, site: str | None = None, html: str | None = None, prom: str | None = None
) -> DoctorOutcome:
    """Judge a facts file again (no job): the report, and the page if ``html`` is given."""
    from slurm_supernode.site.loader import load_site

    return judge(load_site(site_argument(site)), read_facts(Path(path)), html=html, prom=prom)


def login_findings(hosts: tuple[str, ...]) -> list[Finding]:
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


def read_facts(path: Path) -> DoctorFacts:
    from slurm_supernode.doctor.model import DoctorFacts

    try:
        return DoctorFacts.from_dict(json.loads(path.read_text()))
    except OSError as exc:
        raise InputError(f"cannot read it: {exc.strerror}", where=str(path)) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"not a doctor facts file ({exc})", where=str(path)) from None


def judge(
    site: Site,
    facts: DoctorFacts,
    *,
    extra: list[Finding] | None = None,
    html: str | None = None,
    prom: str | None = None,
) -> DoctorOutcome:
    """Evaluate the six steps; write the HTML page and its JSON beside it when ``html``."""
    from slurm_supernode.doctor.html import render_html
    from slurm_supernode.doctor.steps import evaluate
    from slurm_supernode.fsutil import write_atomic

    report = evaluate(site, facts, extra=extra or ())
    if html:
        try:
            write_atomic(html, render_html(report, facts, slow_pct=site.doctor.slow_pct))
            write_atomic(Path(html).with_suffix(".json"), json.dumps(report.to_dict(), indent=1))
        except OSError as exc:
            raise InputError(f"cannot write {html}: {exc.strerror}", where="--html") from None
    if prom:
        from slurm_supernode.doctor.prom import prom_families, scope
        from slurm_supernode.promfile import write_textfile

        write_textfile(prom, prom_families(report), scope(report.site))
    return DoctorOutcome(report, facts, html=html)


def run_inside(
    *,
    site: str | None,
    db: str | None,
    backend: str = "auto",
    size: int | None = None,
    iters: int | None = None,
    checkpoint_dir: str | None = None,
) -> int:
    """The part torchrun runs inside the doctor's allocation: measure, write the facts file
    into the job directory (``SNRUN_JOB_DIR``); returns the exit code."""
    from slurm_supernode.doctor.inside import InsideOptions
    from slurm_supernode.doctor.inside import run_inside as measure_inside
    from slurm_supernode.doctor.job import FACTS_FILE
    from slurm_supernode.jobenv import JobEnvironment
    from slurm_supernode.site.loader import load_site

    settings = SnrunSettings.from_environ()
    job_dir = settings.job_dir
    site_file = settings.site_file or site
    if not job_dir or not site_file:
        raise InputError(
            "--in-job runs inside a doctor job (SNRUN_JOB_DIR, SNRUN_SITE_FILE)",
            where="--in-job",
            hint="snrun doctor --site S",
        )
    paths = [job_dir, *([checkpoint_dir] if checkpoint_dir else [])]
    opts = InsideOptions(
        out=str(Path(job_dir) / FACTS_FILE),
        db=db,
        backend=backend,
        size=size,
        iters=iters,
        storage_paths=tuple(paths),
        job_id=str(JobEnvironment.from_environ().job_id or ""),
    )
    return measure_inside(load_site(site_file), opts)
