"""End a whole chain: every job id it used, and the ledger's final record."""

from __future__ import annotations

from pathlib import Path


def cancel_chain(job_dir: Path) -> list[int]:
    """Mark the chain cancelled first (a supervisor just starting sees the chain is over),
    then cancel every job id it used (one that already ended is no error). Returns the ids."""
    from slurm_supernode.api.chain_state import chain_job_ids
    from slurm_supernode.runtime import ledger
    from slurm_supernode.slurm.jobs import cancel

    ledger.append(job_dir, "final", state="CANCELLED", reason="snrun cancel")
    ids = chain_job_ids(job_dir)
    for job_id in ids:
        cancel(job_id)
    return ids
