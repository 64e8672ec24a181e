"""Fail fast across nodes: the stop request the supervisor writes and every agent watches.

When one node's ranks fail, the healthy nodes' torchrun would wait in torchelastic's exit
barrier (300 s) or keep training alone. Ending the srun step from outside (SIGTERM to srun)
kills every agent before it records its node's exit. Instead the supervisor writes
``stop/attempt<N>.json`` in the job directory, naming the nodes that failed first; each other
node's agent sees it, stops its own torchrun and still records its ``node_exit`` (``stopped``);
the failing nodes' agents are left alone, so their torchrun reports the failed ranks itself.
The step then ends by itself. On by default; ``SNRUN_FAIL_FAST=0`` turns it off.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from slurm_supernode.fsutil import write_json_atomic

ENV = "SNRUN_FAIL_FAST"
_OFF = ("0", "off", "false", "no")


@dataclass(frozen=True)
class StopRequest:
    """The supervisor's request to end an attempt on every node."""

    attempt: int
    failed: tuple[str, ...]  # the nodes that failed first: their agents let torchrun end itself
    reason: str

    def stops(self, node: str) -> bool:
        """Must the agent of ``node`` stop its torchrun?"""
        return node not in self.failed


def enabled(environ: Mapping[str, str]) -> bool:
    """Fail fast unless the job's environment (``--env``, a site env profile) turns it off."""
    return environ.get(ENV, "1").strip().lower() not in _OFF


def stop_path(job_dir: Path, attempt: int) -> Path:
    return job_dir / "stop" / f"attempt{attempt}.json"


def request_stop(job_dir: Path, attempt: int, failed: Sequence[str], reason: str) -> StopRequest:
    """Write the stop request (temp + rename: an agent never reads half of it)."""
    request = StopRequest(attempt, tuple(failed), reason)
    write_json_atomic(
        stop_path(job_dir, attempt),
        {"attempt": attempt, "failed": list(request.failed), "reason": reason},
    )
    return request


def read_stop(job_dir: Path, attempt: int) -> StopRequest | None:
    """The attempt's stop request, or None (none yet, or unreadable: not a stop)."""
    path = stop_path(job_dir, attempt)
    try:
        data = json.loads(path.read_text())
        return StopRequest(int(data["attempt"]), tuple(data["failed"]), str(data["reason"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


class StopWatch:
    """Cheap repeated look for this node's stop request (one ``stat`` until it exists)."""

    def __init__(self, job_dir: Path, attempt: int, node: str) -> None:
        self._path = stop_path(job_dir, attempt)
        self._job_dir, self._attempt, self._node = job_dir, attempt, node

    def __call__(self) -> StopRequest | None:
        """The request when it asks this node to stop, else None."""
        if not os.path.exists(self._path):
            return None
        request = read_stop(self._job_dir, self._attempt)
        return request if request is not None and request.stops(self._node) else None
