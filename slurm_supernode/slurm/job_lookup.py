"""Where a job's record is found: the controller, then the completion log, then accounting.

A job's record lives in the controller until MinJobAge after it ends; after that only the
job-completion log (`sacct -c`, jobcomp/filetxt) or accounting (`sacct`, slurmdbd) knows it.
`job_info` asks them in that order, so callers see one JobInfo whatever the job's age.

The controller is asked with `scontrol show job --json` (data_parser, Slurm >= 23.02): typed
fields, the derived exit code included. Slurm 22.05's scontrol has no `--json` (it says
`unrecognized option`, without asking the controller; a REFUSED failure): then the `-o` text
form is parsed. Detected on each call from that answer, so nothing is remembered between calls.

Accounting is asked the same way: `sacct --json` (data_parser) where the cluster stores
accounting (slurmdbd); where it does not, sacct says so without asking anyone (`Slurm
accounting storage is disabled`, 22.05's `slurm not configured with slurmdbd`) and exits
non-zero, and the `-P` text form is tried, which then fails the same way. The completion log
(`sacct -c`) is always read as text: `sacct -c --json` prints text (26.05) or refuses (22.05).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace

from slurm_supernode.errors import SlurmError, SlurmErrorKind
from slurm_supernode.slurm.jobinfo import (
    SACCT_FIELDS,
    JobInfo,
    _json_jobs,
    job_from_record,
    job_from_sacct,
    sacct_json_records,
)
from slurm_supernode.slurm.parse import (
    parse_kv_records,
    parse_sacct_rows,
)
from slurm_supernode.slurm.runner import failure_kind, run_slurm


def controller_jobs(job_id: int | None = None) -> list[JobInfo]:
    """What the controller knows: one job (`job_id`) or all; [] when it does not know it.
    JSON where scontrol has it; where it refuses the option (22.05: `unrecognized option
    '--json'`, said without asking the controller) the `-o` text form. Through pyslurm
    instead where it serves this Slurm (slurm/pyslurm_probe.py)."""
    from slurm_supernode.slurm import pyslurm_probe, pyslurm_queries

    if (api := pyslurm_probe.pyslurm_api()) is not None:
        return _exit_codes_from_scontrol(pyslurm_queries.controller_jobs(api, job_id))
    return _scontrol_jobs(job_id)


def _exit_codes_from_scontrol(infos: list[JobInfo]) -> list[JobInfo]:
    """pyslurm reads an exit status of 128+N as N (its ``_get_exit_code``: ``exit 137`` is 9
    there, 137 in scontrol), and gives no raw status to tell them apart: so an ended job's
    non-zero exit codes come from scontrol, in one query for all such jobs (only when there
    are any: jobs that ended in failure within MinJobAge)."""
    unsure = [i for i in infos if i.ended and (i.exit_code or i.derived_exit_code)]
    if not unsure:
        return infos
    ask = unsure[0].job_id if len(unsure) == 1 else None
    told = {i.job_id: i for i in _scontrol_jobs(ask)}
    unsure_ids = {i.job_id for i in unsure}
    fixed = []
    for info in infos:
        cli = told.get(info.job_id) if info.job_id in unsure_ids else None
        if cli is not None:
            info = replace(
                info,
                exit_code=cli.exit_code,
                exit_signal=cli.exit_signal,
                derived_exit_code=cli.derived_exit_code,
            )
        fixed.append(info)
    return fixed


def _scontrol_jobs(job_id: int | None) -> list[JobInfo]:
    """``controller_jobs`` through the command line."""
    target = [str(job_id)] if job_id is not None else []
    proc = run_slurm(["scontrol", "show", "job", "--json", *target], timeout=30, check=False)
    if proc.returncode == 0:
        return _json_jobs(proc.stdout)
    kind = failure_kind(proc)
    if kind is SlurmErrorKind.NOT_FOUND:
        return []
    if kind is not SlurmErrorKind.REFUSED:
        raise SlurmError(
            f"scontrol show job {' '.join(target)} failed: {proc.stderr.strip()}", kind=kind
        )
    proc = run_slurm(["scontrol", "show", "job", "-o", *target], timeout=30, check=False)
    if proc.returncode != 0:
        if (kind := failure_kind(proc)) is SlurmErrorKind.NOT_FOUND:
            return []
        raise SlurmError(
            f"scontrol show job {' '.join(target)} failed: {proc.stderr.strip()}", kind=kind
        )
    return [job_from_record(rec) for rec in parse_kv_records(proc.stdout) if "JobId" in rec]


def _sacct_json(job_id: int) -> tuple[bool, JobInfo | None]:
    """(answered, record): answered is False when sacct gives no JSON here (no accounting
    storage: `Slurm accounting storage is disabled`; 22.05 without slurmdbd; no `--json`:
    all non-zero exits). A zero exit with output that is not sacct's JSON raises SlurmError."""
    proc = run_slurm(["sacct", "--json", "-j", str(job_id)], timeout=30, check=False)
    if proc.returncode != 0:
        return False, None
    rows = [info for info in sacct_json_records(proc.stdout) if info.job_id == job_id]
    # One entry per job unless Slurm lists several runs: the last is the latest.
    return True, (rows[-1] if rows else None)


def sacct_json_job_info(job_id: int) -> JobInfo | None:
    """The job as accounting knows it, from `sacct --json`; None when sacct gives no JSON
    here (see `_sacct_json`) or accounting does not know the job."""
    return _sacct_json(job_id)[1]


def sacct_job_info(job_id: int, *, completion: bool) -> JobInfo | None:
    """The job as `sacct -c` (completion log, `completion=True`) or `sacct` (accounting)
    knows it; None when that source is not configured or does not know the job.

    Accounting is asked with `sacct --json` first (detected: it answers in JSON only where
    accounting storage is enabled), then with the text form. Slurm 22.05's `sacct -c` misreads
    its own log for job names with spaces (the state comes back empty, here "UNKNOWN"):
    snrun's job names have none.
    """
    if not completion:
        answered, info = _sacct_json(job_id)
        return info if answered else sacct_text_job_info(job_id)
    return _sacct_text(job_id, completion=True)


def sacct_text_job_info(job_id: int) -> JobInfo | None:
    """Accounting's record from `sacct -P` text (Slurm without `sacct --json`)."""
    return _sacct_text(job_id, completion=False)


def _sacct_text(job_id: int, *, completion: bool) -> JobInfo | None:
    cmd = ["sacct", "-j", str(job_id), "-P", "-n", "-o", ",".join(SACCT_FIELDS)]
    if completion:
        cmd.insert(1, "-c")
    proc = run_slurm(cmd, timeout=30, check=False)
    if proc.returncode != 0:
        return None  # no jobcomp file / accounting disabled: this source does not know
    rows = [r for r in parse_sacct_rows(proc.stdout, SACCT_FIELDS) if r["jobid"] == str(job_id)]
    # The completion log has one line per run of a requeued job: the last one is the latest.
    return job_from_sacct(rows[-1], "sacct-c" if completion else "sacct") if rows else None


def job_info(job_id: int) -> JobInfo | None:
    """The job's current record: controller first, then accounting's JSON (`sacct --json`:
    restart count, reason and output path included), then `sacct -c`, then `sacct`'s text;
    None if no source knows the job (never submitted, or forgotten everywhere)."""
    for info in controller_jobs(job_id):
        if info.job_id == job_id:
            if info.ended and info.derived_exit_code is None:
                logged = sacct_job_info(job_id, completion=True)
                if logged is not None and logged.derived_exit_code is not None:
                    info = replace(info, derived_exit_code=logged.derived_exit_code)
            return info
    answered, found = _sacct_json(job_id)
    if found is not None:
        return found
    logged = sacct_job_info(job_id, completion=True)
    if logged is not None or answered:
        return logged
    return sacct_text_job_info(job_id)


def jobs_in_one_query(job_ids: Collection[int] = ()) -> list[JobInfo]:
    """One controller query for many jobs: the one job when one is asked, else every job the
    controller knows (a caller picks its own). The watcher polls with it; ``records_of_many``
    answers from it."""
    return controller_jobs(next(iter(job_ids)) if len(job_ids) == 1 else None)


def records_of_many() -> Callable[[int], JobInfo | None]:
    """``job_info`` for many jobs from one controller query, made on first need (an
    unreachable controller is asked once: the same SlurmError each time). A job the controller
    no longer lists, or lists as ended, is looked up alone as ``job_info`` does (accounting
    fills its exit code)."""
    known: dict[int, JobInfo] = {}
    failed: list[SlurmError] = []
    asked: list[bool] = []

    def record(job_id: int) -> JobInfo | None:
        if not asked:
            asked.append(True)
            try:
                known.update((info.job_id, info) for info in jobs_in_one_query())
            except SlurmError as exc:
                failed.append(exc)
        if failed:
            raise failed[0]
        info = known.get(job_id)
        return info if info is not None and not info.ended else job_info(job_id)

    return record


def jobs_named(name: str) -> list[JobInfo]:
    """Jobs the controller still knows whose name is exactly `name` (any user, any state;
    ended jobs only until MinJobAge). Used to find the jobs of a recurring schedule."""
    return [info for info in controller_jobs() if info.name == name]
