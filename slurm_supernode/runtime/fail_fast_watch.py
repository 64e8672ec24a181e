"""Fail fast, the supervisor's side: the first node whose ranks fail ends the attempt on every
node. The other nodes' agents are asked to stop their torchrun (``runtime.failfast``); a step
that still runs after the grace is signalled from outside.
"""

from __future__ import annotations

import signal
import subprocess
import time

from slurm_supernode.chain import ledger
from slurm_supernode.runtime import failfast
from slurm_supernode.runtime.failure_watch import FailureWatch
from slurm_supernode.runtime.supervisor_config import SupervisorConfig


class FailFastWatch:
    """Looked at every poll while an attempt's step runs; ``failed_first``: the nodes that
    failed first, once one did."""

    def __init__(self, cfg: SupervisorConfig, attempt: int) -> None:
        self._cfg, self._attempt = cfg, attempt
        self._failures = FailureWatch(cfg.job_dir, attempt)
        self._stop_at: float | None = None  # when the stop request was written
        self.failed_first: tuple[str, ...] = ()

    def look(self, proc: subprocess.Popen[bytes], *, may_stop: bool) -> bool:
        """True when this look found the first failure and asked the agents to stop (the
        supervisor looks at nothing else this poll). ``may_stop``: no signal and no hang
        already ends the step."""
        cfg = self._cfg
        if cfg.fail_fast and not self.failed_first and may_stop:
            self.failed_first = self._failures()
            if self.failed_first:  # fail fast: no healthy node waits in torchrun's exit barrier
                self._stop_at = self._request_stop(self.failed_first)
                return True
        if self._stop_at is not None and time.time() - self._stop_at > cfg.stop_grace:
            self._stop_at = None  # the agents did not end the step: end it from outside
            proc.send_signal(signal.SIGTERM)
        return False

    def stop_requested(self) -> None:
        """Another watcher asked the agents to stop (a slow node): the grace starts now."""
        self._stop_at = time.time()

    def _request_stop(self, failed: tuple[str, ...]) -> float:
        """Ask every other node's agent to stop its torchrun (runtime/failfast.py). The ledger
        records the request before the request is written: a stopped node's own record then
        always follows it, however fast its agent acts. Returns when."""
        reason = f"{','.join(failed)} failed first"
        ledger.append(
            self._cfg.job_dir, "stop_requested", attempt=self._attempt, job_id=self._cfg.job_id,
            failed=list(failed),
        )  # fmt: skip
        failfast.request_stop(self._cfg.job_dir, self._attempt, failed, reason)
        return time.time()
