"""A job chain's state, from its ledger and Slurm's record of its current job.

An snrun job is a chain: restarts, requeues and resubmissions under new job ids, each an
attempt in the ledger. The ledger's final record is the chain's end; before one is written,
Slurm's record of the newest job id says whether the chain waits or runs, or whether it ended
with nobody left to record it (chain/lost.py judges that).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from slurm_supernode.chain import ledger
from slurm_supernode.slurm.jobinfo import JobInfo
from slurm_supernode.slurm.reasons import pending_reason


@dataclass(frozen=True)
class ChainState:
    """Where a chain stands. ``state`` is the chain's: PENDING or RUNNING (or Slurm's word for
    a job between runs: REQUEUED, COMPLETING...) until it ended COMPLETED, FAILED, CANCELLED,
    TIMEOUT, ...; ``ended`` says it will not run again."""

    state: str
    ended: bool
    reason: str | None
    job_id: int | None  # the chain's newest Slurm job id
    slurm_state: str | None  # Slurm's state of that job (None: no source knows it)
    attempts: int
    source: str  # "ledger" (final record), "slurm" (Slurm's record alone), "queue"
    # pending with a reason that does not pass by waiting (DependencyNeverSatisfied, a
    # partition that cannot serve it...): Slurm keeps it PENDING, it will never start
    never_starts: bool = False

    def __str__(self) -> str:
        why = f" ({self.reason})" if self.reason else ""
        return f"{self.state}{why}, {self.attempts} attempt(s), job {self.job_id or '-'}"


def chain_state(chain: ledger.Chain, job_id: int | None, info: JobInfo | None) -> ChainState:
    """The chain's state from its folded ledger and Slurm's record of job ``job_id``."""
    from slurm_supernode.chain.lost import verdict_without_supervisor

    n = len(chain.attempts)
    slurm = str(info.state) if info is not None else None
    if chain.final is not None:
        final = chain.final
        reason = final.get("reason")
        return ChainState(str(final.get("state")), True, reason, job_id, slurm, n, source="ledger")
    if info is None:
        gone = "Slurm no longer knows the job" if job_id else "no job id recorded"
        return ChainState("UNKNOWN", True, gone, job_id, None, n, source="slurm")
    verdict = verdict_without_supervisor(chain, info)
    if verdict is not None:
        state, reason = str(verdict.get("state")), verdict.get("reason")
        return ChainState(state, True, reason, job_id, slurm, n, source="slurm")
    phase = info.state.phase
    state = "RUNNING" if phase == "RUNNING" else "PENDING" if info.pending else phase
    open_attempt = bool(chain.attempts) and chain.attempts[-1].end is None
    if open_attempt and info.pending and not info.state.held:
        state = "RUNNING"  # the ledger is newer than a record polled a few seconds ago
    waits = pending_reason(info.reason) if state == "PENDING" else None
    if waits is not None:  # Slurm's reason, in words
        never = waits.never
        return ChainState(state, False, str(waits), job_id, slurm, n, "queue", never_starts=never)
    return ChainState(state, False, info.reason, job_id, slurm, n, source="queue")


def chain_job_ids(job_dir: Path) -> list[int]:
    """Every Slurm job id the chain used, oldest first: those submission recorded (job.json),
    the ledger's, and a resubmission whose attempt has not started yet."""
    try:
        ids = json.loads((job_dir / "job.json").read_text()).get("job_ids", [])
    except (OSError, ValueError):
        ids = []
    out = [i for i in ids if isinstance(i, int)]
    out += [i for i in ledger.fold(ledger.read(job_dir)).job_ids if i not in out]
    newest = ledger.current_job_id(job_dir)
    return out if newest is None or newest in out else [*out, newest]
