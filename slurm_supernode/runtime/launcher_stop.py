"""Fail fast on this node: torchrun stopped on the supervisor's request (``runtime.failfast``),
and killed if it lingers in torchelastic's exit barrier once its ranks are gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable

from slurm_supernode.runtime import failfast
from slurm_supernode.runtime.proc_tree import is_worker

# How long torchrun may take to exit after it stopped its ranks on SIGTERM (its own teardown,
# under load) before the agent treats it as stuck in the exit barrier and kills it.
STOPPED_TEARDOWN = 2.0


def stop_launcher(roots: list[int], workers: list[int]) -> None:
    """Stop torchrun: SIGTERM while its ranks live (it stops them as it always does); SIGKILL
    once none is left (it waits in torchelastic's exit barrier then, where a signal is only
    handled when a blocking store call returns: 10-25 s measured with torch 2.13)."""

    sig = signal.SIGTERM if workers else signal.SIGKILL
    for pid in roots:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


class LauncherStop:
    """Carries out this node's fail-fast stop request on torchrun (``roots``): looked at every
    0.1 s while it runs. ``reason``: why it was stopped, once it was."""

    def __init__(
        self,
        stop: Callable[[], failfast.StopRequest | None],
        roots: Callable[[], list[int]],
        below: Callable[[], list[int]],
        reported: Callable[[], bool] = lambda: False,
    ) -> None:
        self._stop, self._roots, self._below = stop, roots, below
        self._reported = reported  # torchrun already ends its ranks on its own
        self.reason: str | None = None
        self._ranks_gone: float | None = None  # since when the stopped torchrun has no rank
        self._spared = False  # its own rank failed: it is left to end by itself

    def _workers(self) -> list[int]:
        return [pid for pid in self._below() if is_worker(pid)]

    def look(self) -> None:
        if self.reason is None:
            request = self._stop()
            if request is None:
                return
            if self._spared or self._reported():
                # its own rank failed (one killed by a signal, say, whose peers' errors came
                # first): a failing node, left alone like those the request names, so torchrun
                # reports its ranks (stopping a rank stuck in a collective takes torch seconds
                # under load); the supervisor's grace still ends a step that never ends
                self._spared = True
                return
            self.reason = request.reason
            stop_launcher(self._roots(), self._workers())
        elif self._workers():
            self._ranks_gone = None
        elif self._ranks_gone is None:
            self._ranks_gone = time.monotonic()
        elif time.monotonic() - self._ranks_gone > STOPPED_TEARDOWN:
            # its ranks are gone and it still lives: it went on into the exit barrier
            stop_launcher(self._roots(), [])
