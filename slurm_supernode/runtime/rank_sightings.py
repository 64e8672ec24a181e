"""When the agent last saw each of torchrun's ranks alive, and which died of a signal or
vanished: the evidence a rank killed by the kernel leaves nowhere else.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any

from slurm_supernode.runtime.proc_tree import children, is_worker, zombie_signal


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class RankSightings:
    """When each of torchrun's children (its ranks) was last seen alive, not dying
    (``proc_tree.stat_exit``): a rank killed by a signal died after that time
    (``runtime/signal_deaths``), and before any peer saw it gone. ``killed``: children seen dead
    of a signal that is a cause before torchrun reaped them (pid -> signal): a loaded torchrun may
    notice seconds later. ``vanished``: ranks seen alive, now gone without the clean-exit mark
    of ``exits`` (forked ranks leave one, ``runtime/rank_entry``): torchrun reaped a rank that
    died before the agent saw its zombie, and stops the rank's siblings without a word (seconds
    when one is stuck in a collective). torchrun's PIDs are looked up until found, then kept
    (in a container that lookup scans /proc)."""

    def __init__(self, roots: Callable[[], list[int]], exits: str | None = None) -> None:
        self._roots = roots
        self._exits = exits
        self._found: list[int] = []
        self._ranks: set[int] = set()  # children seen alive that are ranks
        self.last_seen: dict[int, float] = {}
        self.killed: dict[int, int] = {}
        self.vanished: set[int] = set()

    def look(self) -> None:
        from slurm_supernode.runtime.signal_deaths import STOP_SIGNALS

        if not self._found:
            self._found = self._roots()
        now = time.time()
        present = set()
        for root in self._found:
            for child in children(root):
                present.add(child)
                sig = zombie_signal(child)
                if sig is None:  # alive: not even dying (its peers cannot have seen it gone)
                    self.last_seen[child] = now
                    if child not in self._ranks and is_worker(child):
                        self._ranks.add(child)
                elif sig > 0 and _signal_name(sig) not in STOP_SIGNALS:
                    self.killed[child] = sig
        if self._exits is not None:
            self._look_for_vanished(present, self._exits)

    def _look_for_vanished(self, present: set[int], exits: str) -> None:
        from slurm_supernode.runtime.rank_entry import exit_mark

        for pid in self._ranks - present - self.vanished:
            if not os.path.exists(exit_mark(exits, pid)):
                self.vanished.add(pid)

    def deaths(self) -> tuple[dict[str, Any], ...]:
        """The forked ranks that died of a signal, as entries of torchrun's report (rank,
        local_rank, exit_code, signal, pid): killed ones seen as zombies, with their signal;
        vanished ones without a failure mark (no exception, no exit code), signal unknown
        (``exit_code`` None). Their ranks come from the marks they wrote at their start."""
        from slurm_supernode.runtime.rank_entry import failed_mark, read_rank_mark

        if self._exits is None:
            return ()
        out = []
        silent = {p for p in self.vanished if not os.path.exists(failed_mark(self._exits, p))}
        for pid in sorted(set(self.killed) | silent):
            ranks = read_rank_mark(self._exits, pid)
            if ranks is None:
                continue
            sig = self.killed.get(pid)
            entry: dict[str, Any] = {"rank": ranks[0], "local_rank": ranks[1], "pid": pid}
            entry |= {"exit_code": -sig, "signal": _signal_name(sig)} if sig else {
                "exit_code": None, "signal": "unknown"}  # fmt: skip
            out.append(entry)
        return tuple(out)
