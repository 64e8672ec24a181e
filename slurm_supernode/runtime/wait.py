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
    """Until the ledger has a final record, or Slurm says every job of the chain ended
    without one (the batch script died before the supervisor could write it)."""
    from slurm_supernode.slurm.job_lookup import job_info

    deadline = None if timeout is None else time.monotonic() + timeout
    gone_since: float | None = None
    while True:
        chain = ledger.fold(ledger.read(job_dir))
        if chain.final:
            return chain.final
        ids = chain.job_ids or [job_id]
        infos = [job_info(i) for i in ids[-1:]]
        ended = all(i is None or i.ended for i in infos)
        if ended:
            gone_since = gone_since or time.monotonic()
            if time.monotonic() - gone_since > 5:  # give a just-written final record a chance
                state = str(infos[0].state) if infos and infos[0] else "UNKNOWN"
                return {"state": state, "reason": "job ended without a final ledger record"}
        else:
            gone_since = None
        if deadline is not None and time.monotonic() > deadline:
            raise JobError(f"job {job_id} did not end within {timeout:.0f} s", where=str(job_dir))
        time.sleep(poll)
