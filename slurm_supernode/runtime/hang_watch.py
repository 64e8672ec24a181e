"""A step without progress: its ranks' stacks dumped, then the step stopped.

Progress is the heartbeat file the training script touches (its first line a marker; ``done...``
says the work is finished, so a slow shutdown is no hang) and, between heartbeats, the ranks'
CPU and log activity (``forensics.hang``).
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from slurm_supernode.forensics.hang import dump_stacks, is_hung, last_activity
from slurm_supernode.runtime.supervisor_config import SupervisorConfig

HEARTBEAT = "heartbeat"


def read_progress(job_dir: Path) -> tuple[str | None, float | None]:
    """The heartbeat's marker (its first line) and when it was last touched."""
    path = job_dir / HEARTBEAT
    try:
        first = path.read_text().strip().splitlines()[:1]  # the marker is the first line
        return (first[0][:200] if first else None), path.stat().st_mtime
    except OSError:
        return None, None


class HangWatch:
    """Looked at every poll while an attempt's step runs; ``hung`` once it stopped the step."""

    def __init__(self, cfg: SupervisorConfig, attempt: int, started: float) -> None:
        self._cfg, self._attempt, self._started = cfg, attempt, started
        self._timeout = cfg.hang_timeout
        self._activity, self._looked = started, 0.0
        self.hung = False

    def look(self, proc: subprocess.Popen[bytes]) -> None:
        cfg, started = self._cfg, self._started
        if self._timeout <= 0 or self.hung:
            return
        marker, mtime = read_progress(cfg.job_dir)
        fresh = mtime is not None and mtime > started
        if fresh and (marker or "").startswith("done"):
            self._timeout = 0.0  # the script finished its work: shutdown is no hang
            return
        now = time.time()
        if not fresh and now - self._looked >= min(5.0, self._timeout / 4):
            self._activity = last_activity(cfg.job_dir, self._attempt, started)
            self._looked = now
        self.hung = is_hung(now, started, self._timeout, cfg.hang_startup, mtime, self._activity)
        if self.hung:  # evidence first: where every rank is stuck
            dump_stacks(cfg.python, cfg.job_id, list(cfg.hosts), cfg.job_dir, self._attempt, 120.0)
            proc.send_signal(signal.SIGTERM)
