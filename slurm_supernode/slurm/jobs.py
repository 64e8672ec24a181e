"""Submit, cancel, update, requeue, release and wait for jobs (the job's record:
slurm/jobinfo.py; where it is found: slurm/job_lookup.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from slurm_supernode.errors import JobError, SlurmError, SlurmErrorKind
from slurm_supernode.slurm.job_lookup import job_info
from slurm_supernode.slurm.jobinfo import JobInfo
from slurm_supernode.slurm.runner import failure_kind, run_slurm
from slurm_supernode.slurm.state import JobState


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
        if info.state.phase == "PENDING":
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
        if info.state.phase not in ("COMPLETING", "REQUEUED", "REQUEUE_FED"):
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

    A state matches by its `phase`, the word Slurm's text form prints: the first flag in
    Slurm's precedence, else the base (RUNNING+CONFIGURING is CONFIGURING, not yet RUNNING).
    Ended means over with its epilogs done (not COMPLETING), so the record's node list is
    the allocation's. Raises WaitTimeout after `timeout` seconds, JobError if no source
    knows the job.
    """
    wanted = {s.upper() for s in states}
    return wait_until(job_id, lambda state: state.phase in wanted, timeout, poll)


def wait_until(
    job_id: int, condition: Callable[[JobState], bool], timeout: float, poll: float = 0.5
) -> JobInfo:
    """Poll until `condition(state)` holds or the job has ended (see `wait_for`)."""
    deadline = time.monotonic() + timeout
    while True:
        info = job_info(job_id)
        if info is None:
            raise JobError(f"job {job_id} is unknown to Slurm", hint="check the job id")
        if condition(info.state) or info.ended:
            return info
        if time.monotonic() >= deadline:
            raise WaitTimeout(
                f"job {job_id} still {info.state} after {timeout:g} s"
                + (f" (reason: {info.reason})" if info.reason else ""),
                hint=f"scontrol show job {job_id}",
            )
        time.sleep(poll)
