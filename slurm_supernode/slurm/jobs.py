"""Submit, inspect, cancel, requeue and wait for jobs.

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

import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from slurm_supernode.errors import JobError, SlurmError, SlurmErrorKind
from slurm_supernode.slurm.parse import (
    json_exit_code,
    json_number,
    json_state,
    json_time,
    null,
    parse_exit_code,
    parse_kv_records,
    parse_sacct_rows,
    parse_time,
    to_int,
)
from slurm_supernode.slurm.runner import failure_kind, run_slurm

# States after which a job will not run again by itself.
ENDED_STATES = frozenset(
    {
        "COMPLETED",
        "FAILED",
        "CANCELLED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "OUT_OF_MEMORY",
        "BOOT_FAIL",
        "DEADLINE",
        "REVOKED",
        "SPECIAL_EXIT",
    }
)

SACCT_FIELDS = [
    "jobid",
    "jobname",
    "state",
    "exitcode",
    "derivedexitcode",
    "nodelist",
    "nnodes",
    "partition",
    "start",
    "end",
    "workdir",
]


@dataclass(frozen=True)
class JobInfo:
    """What Slurm says about one job.

    `state` is Slurm's upper-case state ("RUNNING", "FAILED"); `exit_code`/`exit_signal` come
    from the batch script's `ExitCode=3:0`, `derived_exit_code` is the highest step exit code
    (None while unknown: scontrol on 22.05 does not print it; the completion log has it).
    `restart_count` and `stdout` are None when the record came from sacct (it does not keep
    them); `source` says where the record came from: "scontrol", "sacct-c" (completion log),
    "sacct-json" (accounting, `sacct --json`) or "sacct" (accounting, text form).
    """

    job_id: int
    name: str
    state: str
    reason: str | None
    exit_code: int
    exit_signal: int
    derived_exit_code: int | None
    nodelist: str | None
    num_nodes: int
    restart_count: int | None  # also from `sacct --json` (accounting keeps it)
    partition: str | None
    start_time: datetime | None
    end_time: datetime | None
    work_dir: str | None
    stdout: str | None
    source: str

    @property
    def ended(self) -> bool:
        """The job is over and will not run again unless someone requeues it."""
        return self.state in ENDED_STATES

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"

    @property
    def running(self) -> bool:
        return self.state == "RUNNING"


class WaitTimeout(JobError):
    """`wait_for` gave up: the job did not reach the wanted state in time."""


def parse_job_id(text: str) -> int:
    """`sbatch --parsable` prints `123` or `123;cluster`."""
    head = text.strip().splitlines()[-1].split(";")[0].strip() if text.strip() else ""
    if not head.isdigit():
        raise SlurmError(
            f"sbatch printed no job id: {text.strip()!r}", kind=SlurmErrorKind.BAD_OUTPUT
        )
    return int(head)


def job_from_record(rec: dict[str, str]) -> JobInfo:
    """A parsed `scontrol show job -o` record -> JobInfo."""
    code, sig = parse_exit_code(rec.get("ExitCode"))
    derived = parse_exit_code(rec["DerivedExitCode"])[0] if "DerivedExitCode" in rec else None
    return JobInfo(
        job_id=int(rec["JobId"]),
        name=rec.get("JobName", ""),
        state=(rec.get("JobState") or "UNKNOWN").upper(),
        reason=null(rec.get("Reason")),
        exit_code=code,
        exit_signal=sig,
        derived_exit_code=derived,
        nodelist=null(rec.get("NodeList")),
        num_nodes=to_int(rec.get("NumNodes")),
        restart_count=to_int(rec.get("Restarts")),
        partition=null(rec.get("Partition")),
        start_time=parse_time(rec.get("StartTime")),
        end_time=parse_time(rec.get("EndTime")),
        work_dir=null(rec.get("WorkDir")),
        stdout=null(rec.get("StdOut")),
        source="scontrol",
    )


def job_from_json(job: Mapping[str, object]) -> JobInfo:
    """One entry of `scontrol show job --json`'s `jobs` list -> JobInfo."""
    code, sig = json_exit_code(job.get("exit_code"))
    derived = job.get("derived_exit_code")
    restarts = job.get("restart_cnt")

    def text(key: str) -> str | None:
        value = job.get(key)
        return null(value) if isinstance(value, str) else None

    return JobInfo(
        job_id=json_number(job.get("job_id")) or 0,
        name=text("name") or "",
        state=json_state(job.get("job_state")),
        reason=text("state_reason"),
        exit_code=code,
        exit_signal=sig,
        derived_exit_code=json_exit_code(derived)[0] if isinstance(derived, dict) else None,
        nodelist=text("nodes"),
        num_nodes=json_number(job.get("node_count")) or 0,
        restart_count=json_number(restarts) if restarts is not None else None,
        partition=text("partition"),
        start_time=json_time(job.get("start_time")),
        end_time=json_time(job.get("end_time")),
        work_dir=text("current_working_directory"),
        stdout=text("standard_output"),
        source="scontrol",
    )


def _jobs_document(text: str, command: str) -> tuple[dict, list]:
    """A Slurm ``--json`` answer and its ``jobs`` list; SlurmError (BAD_OUTPUT) when the text
    is not JSON or has no such list. ``command`` names the command in the error."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise SlurmError(
            f"{command} printed no JSON: {text.strip()[:200]!r}",
            kind=SlurmErrorKind.BAD_OUTPUT,
        ) from e
    entries = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise SlurmError(f"{command} printed no 'jobs' list", kind=SlurmErrorKind.BAD_OUTPUT)
    return doc, entries


def _json_jobs(text: str) -> list[JobInfo]:
    """`scontrol show job --json` output -> JobInfo per job (SlurmError if it is not JSON)."""
    _, entries = _jobs_document(text, "scontrol show job --json")
    return [job_from_json(j) for j in entries if isinstance(j, dict)]


def controller_jobs(job_id: int | None = None) -> list[JobInfo]:
    """What the controller knows: one job (`job_id`) or all; [] when it does not know it.
    JSON where scontrol has it; where it refuses the option (22.05: `unrecognized option
    '--json'`, said without asking the controller) the `-o` text form."""
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


def job_from_sacct(row: dict[str, str], source: str) -> JobInfo:
    """A `sacct -P` row with SACCT_FIELDS -> JobInfo."""
    code, sig = parse_exit_code(row.get("exitcode"))
    derived, _ = parse_exit_code(row.get("derivedexitcode"))
    nodelist = null(row.get("nodelist"))
    return JobInfo(
        job_id=int(row["jobid"]),
        name=row.get("jobname", ""),
        # "CANCELLED by 0" -> "CANCELLED"
        state=(row.get("state") or "UNKNOWN").split()[0].upper(),
        reason=None,
        exit_code=code,
        exit_signal=sig,
        derived_exit_code=derived,
        nodelist=None if nodelist == "None assigned" else nodelist,
        num_nodes=to_int(row.get("nnodes")),
        restart_count=None,
        partition=null(row.get("partition")),
        start_time=parse_time(row.get("start")),
        end_time=parse_time(row.get("end")),
        work_dir=null(row.get("workdir")),
        stdout=None,
        source=source,
    )


def job_from_sacct_json(job: Mapping[str, object]) -> JobInfo:
    """One entry of `sacct --json`'s `jobs` list -> JobInfo.

    The fields read are the same in data_parser v0.0.42 (24.11) and v0.0.45 (26.05): `state`
    is `{"current": ["FAILED"], "reason": "None"}`, times are under `time` (epoch, 0 = none),
    the node count is `allocation_nodes`, "None assigned" means no nodes yet.
    """

    def text(key: str) -> str | None:
        value = job.get(key)
        return null(value) if isinstance(value, str) else None

    state = job.get("state")
    current = state.get("current") if isinstance(state, dict) else state
    reason = state.get("reason") if isinstance(state, dict) else None
    raw_times = job.get("time")
    times: Mapping[str, object] = raw_times if isinstance(raw_times, dict) else {}
    code, sig = json_exit_code(job.get("exit_code"))
    derived = job.get("derived_exit_code")
    restarts = job.get("restart_cnt")
    nodelist = text("nodes")
    return JobInfo(
        job_id=json_number(job.get("job_id")) or 0,
        name=text("name") or "",
        state=json_state(current),
        reason=null(reason) if isinstance(reason, str) else None,
        exit_code=code,
        exit_signal=sig,
        derived_exit_code=json_exit_code(derived)[0] if isinstance(derived, dict) else None,
        nodelist=None if nodelist == "None assigned" else nodelist,
        num_nodes=json_number(job.get("allocation_nodes")) or 0,
        restart_count=json_number(restarts) if restarts is not None else None,
        partition=text("partition"),
        start_time=json_time(times.get("start")),
        end_time=json_time(times.get("end")),
        work_dir=text("working_directory"),
        stdout=text("stdout_expanded") or text("stdout"),
        source="sacct-json",
    )


def sacct_json_records(text: str) -> list[JobInfo]:
    """`sacct --json` output -> JobInfo per entry; SlurmError (BAD_OUTPUT) when it is not
    JSON, has no `jobs` list, or reports errors without jobs."""
    doc, entries = _jobs_document(text, "sacct --json")
    errors = doc.get("errors")
    if not entries and isinstance(errors, list) and errors:
        first = errors[0] if isinstance(errors[0], dict) else {}
        what = first.get("description") or first.get("error") or str(errors[0])
        raise SlurmError(f"sacct --json reported: {what}", kind=SlurmErrorKind.BAD_OUTPUT)
    return [job_from_sacct_json(j) for j in entries if isinstance(j, dict)]


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
    answered, info = _sacct_json(job_id)
    if info is not None:
        return info
    logged = sacct_job_info(job_id, completion=True)
    if logged is not None or answered:
        return logged
    return sacct_text_job_info(job_id)


def submit(
    script: str,
    args: Sequence[str] = (),
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """Submit a batch script (its text, passed on stdin) with extra sbatch `args`; returns the
    job id. `env` adds variables to sbatch's environment (exported to the job by default)."""
    proc = run_slurm(["sbatch", "--parsable", *args], input=script, cwd=cwd, env=env, timeout=60)
    return parse_job_id(proc.stdout)


def cancel(job_id: int, signal: str | None = None, batch_only: bool = False) -> None:
    """Cancel the job, or with `signal` send it that signal (`batch_only`: to the batch shell
    only). Cancelling a job that already ended is not an error."""
    cmd = ["scancel"]
    if signal:
        cmd.append(f"--signal={signal}")
    if batch_only:
        cmd.append("--batch")
    cmd.append(str(job_id))
    proc = run_slurm(cmd, timeout=30, check=False)
    if proc.returncode != 0 and (kind := failure_kind(proc)) is not SlurmErrorKind.ENDED:
        raise SlurmError(f"scancel {job_id} failed: {proc.stderr.strip()}", kind=kind)


def update_job(job_id: int, **fields: object) -> None:
    """`scontrol update JobId=ID Key=Value ...`, e.g. `update_job(5, TimeLimit="10:00")`."""
    if not fields:
        return
    pairs = [f"{k}={v}" for k, v in fields.items()]
    run_slurm(["scontrol", "update", f"JobId={job_id}", *pairs], timeout=30)


def requeue(job_id: int, *, hold: bool = False, release: bool = True) -> None:
    """Put the job back in the queue (its next run sees SLURM_RESTART_COUNT+1).

    Slurm makes a requeued job eligible only after 120 s; with `release` (and no `hold`)
    `release_requeued` lets it run at once. `hold` requeues it held (`scontrol release` later).
    """
    run_slurm(["scontrol", "requeuehold" if hold else "requeue", str(job_id)], timeout=30)
    if release and not hold:
        release_requeued(job_id)


def release_held(job_id: int) -> None:
    """`scontrol release`: a held job (`requeuehold`, `--hold`) may start again."""
    run_slurm(["scontrol", "release", str(job_id)], timeout=30)


def release_requeued(job_id: int, *, timeout: float = 30) -> bool:
    """Let a requeued job (by `requeue`, RequeueExit or a node failure) start now instead of
    after Slurm's 120 s BeginTime; True if it was released, False if it was not waiting.

    Right after a requeue the job is still COMPLETING: an update then succeeds but is
    overwritten by the requeue's BeginTime, so this waits for the BeginTime, updates, and checks.
    """
    deadline = time.monotonic() + timeout
    # A requeued job shows PENDING (reason None) while its old run still completes on its
    # nodes; Slurm sets the BeginTime only once that is done. Until `settle`, PENDING without
    # it is not yet a job that needs no release.
    settle = time.monotonic() + min(timeout, 30.0)
    released = False
    while True:
        info = job_info(job_id)
        if info is None:
            raise JobError(f"job {job_id} vanished after requeue")
        if info.state == "PENDING":
            if info.reason != "BeginTime":
                if released or time.monotonic() > settle:
                    return released
                time.sleep(0.2)
                continue
            if time.monotonic() > deadline:
                raise SlurmError(
                    f"job {job_id} still waits for its BeginTime after release",
                    kind=SlurmErrorKind.STUCK,
                    hint=f"scontrol update JobId={job_id} StartTime=now",
                )
            # slurmd refuses a credential created in the same second as the revocation of the
            # previous run's ("Job credential revoked": the rerun fails at once), so the rerun
            # must start in a later second. (Slurm's 120 s delay exists for this.)
            time.sleep(1.1 - time.time() % 1)
            update_job(job_id, StartTime="now")
            released = True
            continue
        if info.state not in ("COMPLETING", "REQUEUED", "REQUEUE_FED"):
            return released  # running again, or ended: nothing (more) to release
        if time.monotonic() > deadline:
            raise SlurmError(
                f"job {job_id} stayed {info.state} after requeue",
                kind=SlurmErrorKind.STUCK,
                hint=f"scontrol update JobId={job_id} StartTime=now",
            )
        time.sleep(0.1)


def wait_for(job_id: int, states: Iterable[str], timeout: float, poll: float = 0.5) -> JobInfo:
    """Poll until the job is in one of `states` (e.g. {"RUNNING"}) or has ended.

    Raises WaitTimeout after `timeout` seconds, JobError if no source knows the job.
    """
    wanted = {s.upper() for s in states}
    deadline = time.monotonic() + timeout
    while True:
        info = job_info(job_id)
        if info is None:
            raise JobError(f"job {job_id} is unknown to Slurm", hint="check the job id")
        if info.state in wanted or info.ended:
            return info
        if time.monotonic() >= deadline:
            raise WaitTimeout(
                f"job {job_id} still {info.state} after {timeout:g} s"
                + (f" (reason: {info.reason})" if info.reason else ""),
                hint=f"scontrol show job {job_id}",
            )
        time.sleep(poll)


def jobs_named(name: str) -> list[JobInfo]:
    """Jobs the controller still knows whose name is exactly `name` (any user, any state;
    ended jobs only until MinJobAge). Used to find the jobs of a recurring schedule."""
    return [info for info in controller_jobs() if info.name == name]
