"""Wait for a job chain to end (``snrun --wait``, like ``sbatch --wait``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from slurm_supernode.errors import JobError
from slurm_supernode.runtime import ledger


def wait_chain(
    job_dir: Path, job_id: int, timeout: float | None = None, poll: float = 1.0
) -> dict[str, Any]:
    """Until the ledger has a final record, or Slurm says the chain's last job ended without
    one (the batch step died) or waits held with nobody to release it."""
    from slurm_supernode.runtime.lost import verdict_without_supervisor
    from slurm_supernode.slurm.job_lookup import job_info

    deadline = None if timeout is None else time.monotonic() + timeout
    gone_since: float | None = None
    while True:
        chain = ledger.fold(ledger.read(job_dir))
        if chain.final:
            return chain.final
        info = job_info((chain.job_ids or [job_id])[-1])
        verdict = verdict_without_supervisor(chain, info) if info is not None else None
        if info is None or verdict is not None:
            gone_since = gone_since or time.monotonic()
            if time.monotonic() - gone_since > 5:  # give a just-written final record a chance
                return verdict or {"state": "UNKNOWN", "reason": "Slurm no longer knows the job"}
        else:
            gone_since = None
        if deadline is not None and time.monotonic() > deadline:
            raise JobError(f"job {job_id} did not end within {timeout:.0f} s", where=str(job_dir))
        time.sleep(poll)
