"""End a whole chain: every job id it used, and the ledger's final record.

Ended is ended: a chain whose final record is written (or that Slurm says ended with nobody
left to write one) is not touched. ``cancel_chain`` then writes nothing, cancels nothing and
says so (``CancelOutcome.ended``); ``snrun cancel`` prints that as a note and exits 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CancelOutcome:
    """What a cancel did. ``job_ids``: the ids cancelled (none when the chain had ended);
    ``ended``: the state the chain had already ended in (None: it was cancelled now), with
    ``reason``, the end's own reason."""

    job_ids: tuple[int, ...]
    ended: str | None = None
    reason: str | None = None

    @property
    def cancelled(self) -> bool:
        return self.ended is None

    def note(self, what: str) -> str:
        """One line for ``what`` (``job chain NAME``)."""
        if self.ended is not None:
            why = f" ({self.reason})" if self.reason else ""
            return f"{what} had already ended {self.ended}{why}: nothing cancelled, nothing changed"
        return f"cancelled {what} ({', '.join(map(str, self.job_ids)) or 'no job ids'})"


def cancel_chain(job_dir: Path) -> CancelOutcome:
    """Mark the chain cancelled first (a supervisor just starting sees the chain is over),
    then cancel every job id it used (one that already ended is no error). A chain that has
    ended is left as it is (``CancelOutcome.ended``)."""
    from slurm_supernode.api.chain_state import chain_job_ids
    from slurm_supernode.chain import ledger
    from slurm_supernode.slurm.jobs import cancel

    ended = ended_state(job_dir)
    if ended is not None:
        return CancelOutcome((), *ended)
    if ledger.append_final(job_dir, state="CANCELLED", reason="snrun cancel") is None:
        final = ledger.fold(ledger.read(job_dir)).final or {}  # ended meanwhile: it stands
        return CancelOutcome((), str(final.get("state")), final.get("reason"))
    ids = chain_job_ids(job_dir)
    for job_id in ids:
        cancel(job_id)
    return CancelOutcome(tuple(ids))


def ended_state(job_dir: Path) -> tuple[str, str | None] | None:
    """The state and reason the chain ended in, or None while it can still run: its final
    record, else Slurm's record of its newest job when that ended with nobody to write one
    (a chain that waits held with no supervisor can still be cancelled; one Slurm no longer
    knows at all ended long ago). Slurm unreachable: None (the cancel is tried)."""
    from slurm_supernode.api.chain_state import chain_job_ids
    from slurm_supernode.chain import ledger
    from slurm_supernode.chain.lost import verdict_without_supervisor
    from slurm_supernode.errors import SlurmError
    from slurm_supernode.slurm.job_lookup import job_info

    chain = ledger.fold(ledger.read(job_dir))
    if chain.final is not None:
        return str(chain.final.get("state")), chain.final.get("reason")
    ids = chain_job_ids(job_dir)
    if not ids:
        return None
    try:
        info = job_info(ids[-1])
    except SlurmError:
        return None
    if info is None:
        return "UNKNOWN", f"Slurm no longer knows job {ids[-1]}"
    verdict = verdict_without_supervisor(chain, info)
    if verdict is None or verdict.get("state") == "HELD":
        return None
    return str(verdict["state"]), verdict.get("reason")
