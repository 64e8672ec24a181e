"""A rank killed by a signal (SIGKILL, SIGSEGV, ...) writes nothing itself: the agent records
it.

A rank that raises leaves torchelastic's error file and a ``rank_failed`` record; a rank the
kernel kills leaves neither, and its peers' errors about the lost connection (written a moment
later) would be taken for the cause. torchrun's failure report names the rank, its process and
the signal; the agent watched torchrun's children and knows when it last saw that process alive.
With that time it writes a ``rank_failed`` record carrying ``died``: the supervisor puts its
node first, and ``snrun status`` names it first (it orders ranks by the ledger's times; the
rank's error file is left to the rank and torch: none is written in its name). Signals that stop
ranks on purpose (torchrun's SIGTERM to a failed node's other ranks, a cancel) are no cause and
are left alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# what torchrun, Slurm and snrun send to stop ranks that did nothing wrong
STOP_SIGNALS = frozenset({"SIGTERM", "SIGINT", "SIGHUP", "SIGUSR1", "SIGUSR2"})


def signal_deaths(ranks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ranks of torchrun's report (``parse_failures``) killed by a signal that is a cause."""
    return [r for r in ranks if r.get("signal") and r["signal"] not in STOP_SIGNALS]


def death_text(rank: Mapping[str, Any]) -> str:
    """``killed by signal 9 (SIGKILL)``; for a rank only the agent saw die, without its
    signal, what is known."""
    if rank.get("exit_code") is None:
        return (
            "killed by a signal (gone without an exception or an exit code; torchrun reaped "
            "it before the agent saw which signal)"
        )
    return f"killed by signal {-int(rank['exit_code'])} ({rank['signal']})"


def unreported(
    deaths: Sequence[Mapping[str, Any]], ranks: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The signal deaths the agent saw (``deaths``) of ranks that torchrun's report (``ranks``)
    leaves out: under load it can name only the dead rank's sibling, stopped a moment later.
    A rank the report has is left to it (its exit code or signal is the one torchrun saw)."""
    reported = {r["rank"] for r in ranks}
    return [dict(d) for d in deaths if d["rank"] not in reported]


def record_signal_deaths(
    job_dir: Path,
    *,
    attempt: int,
    node: str,
    ranks: list[dict[str, Any]],
    pids: Mapping[int, int],
    last_seen: Mapping[int, float],
    fallback: float,
) -> list[dict[str, Any]]:
    """``rank_failed`` for each rank of ``ranks`` killed by a signal that is a
    cause. ``pids``: rank -> process (torchrun's report); ``last_seen``: process -> when the
    agent last saw it alive (its death is after that, before any peer's error about it);
    ``fallback``: the time for a process the agent never saw. Returns the records written."""
    from slurm_supernode.chain import ledger

    out = []
    for rank in signal_deaths(ranks):
        died = last_seen.get(pids.get(rank["rank"], -1), fallback)
        text = death_text(rank)
        out.append(
            ledger.append(
                job_dir,
                "rank_failed",
                attempt=attempt,
                node=node,
                rank=rank["rank"],
                local_rank=rank.get("local_rank"),
                error=text,
                signal=rank["signal"],
                died=round(died, 3),
            )
        )
    return out
