"""When the supervisor itself dies (SIGKILL, the OOM killer): end the chain cleanly.

The batch shell outlives a supervisor killed on its own and runs ``snrun supervise --lost RC``
before the job ends: the open attempt and the chain get their end in the ledger (so `snrun
status` and `--wait` say what happened), and an expedited job's requeue is turned off first,
since Slurm would otherwise requeue it held (REQUEUE_HOLD) with nobody left to release it.
The training checkpoint stays: a new submission resumes from it.

Where nothing could write the end (the whole batch step killed), ``verdict_without_supervisor``
reads it from Slurm's record for `snrun status` and `--wait`.
"""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slurm_supernode.chain import ledger
from slurm_supernode.chain.causes import Action, Cause
from slurm_supernode.errors import SlurmError

if TYPE_CHECKING:
    from slurm_supernode.slurm.jobinfo import JobInfo


def describe_exit(rc: int) -> str:
    """``137`` -> ``exit 137 (SIGKILL)``."""
    if rc > 128:
        with contextlib.suppress(ValueError):
            return f"exit {rc} ({signal.Signals(rc - 128).name})"
    return f"exit {rc}"


def record_lost_supervisor(job_dir: Path, rc: int, job_id: int, expedite: bool) -> str | None:
    """Close the open attempt and end the chain FAILED; None if the chain already ended
    (the supervisor wrote its verdict before it died). Returns the reason recorded."""
    if expedite:  # first: whatever happens next, the job must not wait held forever
        from slurm_supernode.slurm import jobs

        with contextlib.suppress(SlurmError):
            jobs.update_job(job_id, Requeue=0)
    chain = ledger.fold(ledger.read(job_dir))
    if chain.final is not None:
        return None
    why = f"the supervisor died ({describe_exit(rc)}) while attempt"
    last = chain.attempts[-1] if chain.attempts else None
    if last is not None and last.end is None:
        why += f" {last.attempt} ran"
        ledger.append(
            job_dir,
            "attempt_end",
            attempt=last.attempt,
            job_id=job_id,
            exit_code=None,
            cause=Cause.SUPERVISOR_LOST.value,
            action=Action.STOP.value,
            detail=f"the supervisor died ({describe_exit(rc)})",
        )
    else:
        why = f"the supervisor died ({describe_exit(rc)}) between attempts"
    reason = f"{why}; submit again to resume from the last checkpoint"
    written = ledger.append_final(job_dir, job_id=job_id, state="FAILED", reason=reason)
    return reason if written is not None else None


def verdict_without_supervisor(chain: ledger.Chain, info: JobInfo | None) -> dict[str, Any] | None:
    """What Slurm's record of the chain's last job says when the ledger has no final record
    and no supervisor can write one: the job ended (its whole batch step died, so not even
    ``--lost`` ran), or it waits held (REQUEUE_HOLD, SPECIAL_EXIT) while its last attempt
    never ended. ``{"state", "reason"}`` like a final record; None while a supervisor may
    still write one (running, pending, completing, or held by a requeue that ended its
    attempt: the releaser lifts that hold)."""
    if chain.final is not None or info is None:
        return None
    job = info.job_id
    if info.ended:
        return {
            "state": info.state.base,
            "reason": f"job {job} ended {info.state} without a final ledger record "
            "(its batch step died): see its Slurm log",
        }
    open_attempt = bool(chain.attempts) and chain.attempts[-1].end is None
    if info.state.held and open_attempt:
        return {
            "state": "HELD",
            "reason": f"job {job} is held ({info.state.phase}) and no supervisor runs: "
            f"'scontrol release {job}' resumes the chain, 'snrun cancel {job}' ends it",
        }
    return None
