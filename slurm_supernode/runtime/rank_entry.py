"""What a forked worker runs (``torchrun --run-path rank_entry.py SCRIPT ARGS``): the script,
with a failing rank's traceback printed to that rank's own stderr first.

In forked-worker mode torchrun runs the script inside its own wrapper, which catches the
exception and passes it to torchrun's summary only: the rank's ``stderr.log`` stays empty and
``snrun logs --rank R`` shows nothing for the rank that failed. Spawned workers print it
themselves (Python does at exit).

It also appends ``rank_failed`` (node, rank, exception) to the job's ledger at once: the
supervisor then ends the step on every node without waiting for torchrun to notice the dead
worker, stop and exit (seconds under load). A script's own non-zero ``sys.exit`` is recorded
too (``SystemExit: 1``): before the rank's sockets close, so before its peers' errors about
the lost connection, and the failing rank, not a peer, is named first. Run by path; snrun is
imported only for that record, and a record that cannot be written never hides the exception.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback


def main() -> None:
    sys.argv = sys.argv[1:]  # [SCRIPT, ARGS...]: what the script expects
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as exc:  # the script's own exit code: no traceback to print
        if exc.code not in (None, 0):
            record(exc)
        raise
    except Exception as exc:  # not KeyboardInterrupt
        traceback.print_exc()
        sys.stderr.flush()
        record(exc)
        raise


def record(exc: BaseException) -> None:
    """``rank_failed`` in the ledger of $SNRUN_JOB_DIR, for node $SNRUN_NODE (set by the agent)."""
    job_dir, node = os.environ.get("SNRUN_JOB_DIR"), os.environ.get("SNRUN_NODE")
    if not job_dir or not node:
        return
    try:
        from pathlib import Path

        from slurm_supernode.jobenv import JobEnvironment
        from slurm_supernode.runtime import ledger

        env = JobEnvironment.from_environ(os.environ)
        ledger.append(
            Path(job_dir),
            "rank_failed",
            attempt=env.attempt,
            node=node,
            rank=env.rank,
            error=f"{type(exc).__name__}: {exc}"[:500],
        )
    except Exception:  # the rank's own exception is what matters
        pass


if __name__ == "__main__":
    main()
