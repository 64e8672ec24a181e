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

A rank that ends well (the script returns or exits 0) leaves an empty file named by its process
id in $SNRUN_RANK_EXITS: a rank of the agent's torchrun that is gone without one died (a signal
torchrun reaped before the agent saw its zombie, an exception), and its node is a failing one
(``runtime/agent``). A rank that fails with an exception or a non-zero exit leaves
``<pid>.failed`` instead, and every rank names itself at its start in ``<pid>.rank`` ("RANK
LOCAL_RANK"): a rank gone with neither mark died of a signal, and the agent records which rank
it was itself (torchrun's report, under load, can name only its sibling).
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from collections.abc import Callable

EXITS_ENV = "SNRUN_RANK_EXITS"  # the folder of the clean-exit marks


def exit_mark(folder: str, pid: int) -> str:
    """The mark of process ``pid``'s clean exit in ``folder``."""
    return os.path.join(folder, str(pid))


def failed_mark(folder: str, pid: int) -> str:
    """The mark of process ``pid``'s failure (an exception or a non-zero exit) in ``folder``."""
    return os.path.join(folder, f"{pid}.failed")


def rank_mark(folder: str, pid: int) -> str:
    """Where process ``pid`` wrote its rank and local rank at its start."""
    return os.path.join(folder, f"{pid}.rank")


def read_rank_mark(folder: str, pid: int) -> tuple[int, int] | None:
    """(rank, local rank) that process ``pid`` wrote at its start; None without a mark."""
    try:
        with open(rank_mark(folder, pid)) as fh:
            rank, local_rank = (int(x) for x in fh.read().split())
    except (OSError, ValueError):
        return None
    return rank, local_rank


def main() -> None:
    sys.argv = sys.argv[1:]  # [SCRIPT, ARGS...]: what the script expects
    _mark(rank_mark, _ranks_text())
    # as `python SCRIPT` does: the script's folder first on sys.path (its sibling modules)
    sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
    _observe_steps()
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as exc:  # the script's own exit code: no traceback to print
        if exc.code not in (None, 0):
            _mark(failed_mark)
            record(exc)
        else:
            _mark(exit_mark)
        raise
    except Exception as exc:  # not KeyboardInterrupt
        # the mark and the record before the traceback: a rank that torchrun stops
        # (SignalException) can be stopped again while it prints (seen in CI), and a rank gone
        # without a mark counts as killed (runtime/agent)
        _mark(failed_mark)
        record(exc)
        traceback.print_exc()
        sys.stderr.flush()
        raise
    finally:
        _observe_steps(finish=True)
    _mark(exit_mark)


def _observe_steps(finish: bool = False) -> None:
    """Step records of this rank (``runtime/step_hook``): the hook before the script, the last
    batch written after it. Never in the script's way: snrun may not be importable here."""
    try:
        from slurm_supernode.runtime import step_hook

        step_hook.finish() if finish else step_hook.install()
    except Exception:
        pass


def _ranks_text() -> str:
    """The text "RANK LOCAL_RANK" of this process, as torchrun set them; empty where snrun cannot be
    imported here (no rank named: the agent then leaves the death to torchrun's report)."""
    try:
        from slurm_supernode.jobenv import JobEnvironment

        env = JobEnvironment.from_environ(os.environ)
    except Exception:
        return ""
    return f"{env.rank} {env.local_rank}\n" if env.rank is not None else ""


def _mark(where: Callable[[str, int], str], text: str = "") -> None:
    """One of this rank's marks (where the agent asks for them)."""
    folder = os.environ.get(EXITS_ENV)
    if not folder:
        return
    try:
        os.makedirs(folder, exist_ok=True)
        with open(where(folder, os.getpid()), "w") as fh:
            fh.write(text)
    except OSError:  # no mark: the agent spares the node or names no rank; the step still ends
        pass


def record(exc: BaseException) -> None:
    """``rank_failed`` in the ledger of $SNRUN_JOB_DIR, for node $SNRUN_NODE (set by the agent)."""
    job_dir, node = os.environ.get("SNRUN_JOB_DIR"), os.environ.get("SNRUN_NODE")
    if not job_dir or not node:
        return
    try:
        from pathlib import Path

        from slurm_supernode.chain import ledger
        from slurm_supernode.jobenv import JobEnvironment

        env = JobEnvironment.from_environ(os.environ)
        ledger.append(
            Path(job_dir),
            "rank_failed",
            attempt=env.attempt,
            node=node,
            rank=env.rank,
            error=f"{type(exc).__name__}: {exc}"[:500],
            point=_point(exc),
        )
    except Exception:  # the rank's own exception is what matters
        pass


def _point(exc: BaseException) -> str | None:
    """Where the rank failed (runtime/failure_point.py); a script's exit: where it exited."""
    from slurm_supernode.runtime.failure_point import program_point

    return program_point(exc.__traceback__)


if __name__ == "__main__":
    main()
