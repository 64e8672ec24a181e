"""Nightly bench schedules from Python: install, list, remove, and submit the next run.

The registry (``bench/schedule.py``) stores each schedule's bench as a typed spec
(``bench/stored_spec.py``); every run is planned from it with ``api.bench.submit_bench``,
never by replaying options through a parser. Both modes run the same entry point at their
time, ``submit_next_run`` (``snrun bench schedule --resubmit NAME``): a scrontab entry
submits tonight's bench, a chained bench job its successor for the next night.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from slurm_supernode.api.bench import BenchSubmission, submit_bench
from slurm_supernode.api.checked import checked
from slurm_supernode.api.site_ref import site_argument
from slurm_supernode.bench import schedule as sch
from slurm_supernode.bench.schedule import Schedule
from slurm_supernode.bench.submit import BenchJob

if TYPE_CHECKING:
    from slurm_supernode.site.model import Site


@dataclass(frozen=True)
class Installed:
    """A schedule just installed, and its first job (if one was submitted)."""

    schedule: Schedule
    job_id: int | None  # chain: the first night's job (or now's); scrontab: only with run_now
    begin: datetime | None  # when that job starts (None: now)
    notices: tuple[str, ...] = ()


@dataclass(frozen=True)
class QueuedJob:
    job_id: int
    state: str
    start: datetime | None


@dataclass(frozen=True)
class ScheduleStatus:
    """A schedule and the jobs Slurm still knows under its name (None: Slurm unreachable)."""

    schedule: Schedule
    jobs: tuple[QueuedJob, ...] | None


@dataclass(frozen=True)
class Removed:
    schedule: Schedule
    cancelled: tuple[int, ...]  # pending jobs cancelled (a running bench finishes)


@dataclass(frozen=True)
class NextRun:
    """What one run of a schedule's entry point did."""

    name: str
    schedule: Schedule | None  # None: the schedule was removed (the chain stops)
    job_id: int | None = None  # the job submitted
    begin: datetime | None = None  # its start (None: now)
    waiting: int | None = None  # a successor that already waits (nothing submitted)


def registry_of(site_arg: str | None) -> tuple[Site, Path]:
    """The site (``--site`` name or file, default ``$SNRUN_SITE``) and its registry path."""
    from slurm_supernode.site.loader import load_site

    site = load_site(site_argument(site_arg))
    return site, sch.registry_path(site.paths.state_dir)


@checked
def install_schedule(
    spec: BenchJob,
    at: str,
    *,
    name: str | None = None,
    mode: str = "auto",
    run_now: bool = False,
    workdir: str | None = None,
) -> Installed:
    """Run the bench ``spec`` every night at ``at`` (HH:MM, the controller's local time).

    ``mode``: ``scrontab``, ``chain`` (a job that submits its successor) or ``auto`` (scrontab
    where Slurm has it). Registered first, and taken out again if anything after fails.
    """
    hour, minute = sch.parse_hhmm(at)
    site, registry = registry_of(spec.site_arg)
    notices: list[str] = []
    if mode != "chain":
        from slurm_supernode.slurm.version import detect_features

        feats = detect_features()
        mode, notice = sch.choose_mode(mode, feats.has_scrontab, feats.scrontab_why_not)
        if notice:
            notices.append(notice)
    site_arg = site_argument(spec.site_arg) or site.name
    entry = sch.new_schedule(
        name or site.name, f"{hour:02d}:{minute:02d}", mode, site_arg, spec,
        workdir or os.getcwd(),
    )  # fmt: skip
    sch.update_schedules(registry, lambda es: sch.add_schedule(es, entry))
    try:
        if mode == "scrontab":
            _install_scron(entry, site)
            job_id = _submit_run(entry, registry, None).job_id if run_now else None
            return Installed(entry, job_id, None, tuple(notices))
        begin = None if run_now else sch.next_run(datetime.now(), hour, minute)
        job_id = _submit_chained(entry, registry, begin)
        return Installed(entry, job_id, begin, tuple(notices))
    except BaseException:
        sch.update_schedules(registry, lambda es: [e for e in es if e.id != entry.id])
        raise


def scron_command(entry: Schedule) -> list[str]:
    """What the scrontab entry runs at HH:MM: the schedule's entry point (no options)."""
    return [sys.executable, "-m", "slurm_supernode", "bench", "schedule",
            "--resubmit", entry.name, "--site", entry.site]  # fmt: skip


def _install_scron(entry: Schedule, site: Site) -> None:
    from slurm_supernode.slurm.scrontab import read_scrontab, write_scrontab

    options = ["--time=00:10:00"]
    if site.slurm.partition:
        options.append(f"--partition={site.slurm.partition}")
    text = read_scrontab()
    if entry.name in sch.scron_names(text):
        text = sch.remove_scron(text, entry.name)
    write_scrontab(sch.add_scron(text, sch.scron_block(entry, scron_command(entry), options)))


def _submit_run(
    entry: Schedule, registry: Path, begin: datetime | None, chain: bool = False
) -> BenchSubmission:
    """Submit one bench of ``entry``'s stored spec (``chain``: the job submits its successor)."""
    run = dataclasses.replace(
        sch.spec_of(entry, registry),
        site_arg=entry.site,
        job_name=entry.job_name,
        workdir=entry.workdir or None,
        schedule=entry.name if chain else None,
        begin=None if begin is None else begin.strftime("%Y-%m-%dT%H:%M:%S"),
    )
    return submit_bench(run)


def _submit_chained(entry: Schedule, registry: Path, begin: datetime | None) -> int:
    """Submit one run of a chain schedule (``begin`` None: now) and record its job id."""
    job_id = _submit_run(entry, registry, begin, chain=True).job_id or 0  # 0: never (not a dry run)
    sch.update_schedules(registry, lambda es: sch.record_job(es, entry.name, job_id))
    return job_id


@checked
def submit_next_run(name: str, *, site: str | None = None) -> NextRun:
    """The schedule's entry point: scrontab submits tonight's bench now; a chained job
    submits the next night's, unless a successor already waits (a rerun never doubles it)."""
    from slurm_supernode.jobenv import JobEnvironment
    from slurm_supernode.slurm import job_lookup

    _, registry = registry_of(site)
    entry = sch.find_schedule(sch.load_schedules(registry), name)
    if entry is None:
        return NextRun(name, None)
    if entry.mode == "scrontab":
        return NextRun(name, entry, _submit_run(entry, registry, None).job_id)
    me = str(JobEnvironment.from_environ().job_id or "")
    waiting = [
        j for j in job_lookup.jobs_named(entry.job_name) if j.pending and str(j.job_id) != me
    ]
    if waiting:
        return NextRun(name, entry, waiting=waiting[0].job_id)
    hour, minute = sch.parse_hhmm(entry.at)
    begin = sch.next_run(datetime.now(), hour, minute)
    return NextRun(name, entry, _submit_chained(entry, registry, begin), begin)


@checked
def list_schedules(*, site: str | None = None) -> tuple[Path, tuple[ScheduleStatus, ...]]:
    """(registry path, every schedule with its queued jobs)."""
    from slurm_supernode.errors import SlurmError
    from slurm_supernode.slurm import job_lookup

    _, registry = registry_of(site)
    rows = []
    for entry in sch.load_schedules(registry):
        queued: tuple[QueuedJob, ...] | None
        try:
            queued = tuple(
                QueuedJob(j.job_id, str(j.state), j.start_time)
                for j in job_lookup.jobs_named(entry.job_name)
                if not j.het_component  # a heterogeneous job is one job, its leader's id
            )
        except SlurmError:
            queued = None
        rows.append(ScheduleStatus(entry, queued))
    return registry, tuple(rows)


@checked
def remove_schedule(key: str, *, site: str | None = None) -> Removed:
    """Remove a schedule (name or id) from the registry first (a running job then finds
    nothing to resubmit), then its scrontab entry, then cancel its pending jobs."""
    from slurm_supernode.slurm import job_lookup, jobs

    _, registry = registry_of(site)
    removed: list[Schedule] = []

    def change(entries: list[Schedule]) -> list[Schedule]:
        rest, entry = sch.remove_schedule(entries, key)
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
        if job.pending:
            jobs.cancel(job.job_id)
            cancelled.append(job.job_id)
    return Removed(entry, tuple(cancelled))
