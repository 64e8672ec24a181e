"""What the supervisor does with the slow-node judge (``runtime/slow_judge``) while an attempt
runs: each mark is said in the job's log; with ``--on-slow-node requeue``
(``SNRUN_ON_SLOW_NODE=requeue``) the first mark also ends the attempt on every node (the
fail-fast stop request, naming no failed node: every agent stops its torchrun and records),
and the attempt ends with cause ``slow``: requeued without those nodes, as a failed node is.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from slurm_supernode.chain import ledger
from slurm_supernode.runtime import failfast
from slurm_supernode.runtime.slow_judge import WINDOW, SlowJudge, judge_for

POLICY_ENV = "SNRUN_ON_SLOW_NODE"


class SlowWatch:
    """Looked at on every poll of the supervisor; ``nodes``: the slow nodes that ended the
    attempt (requeue only). The judge (which loads the site) is made only once the attempt
    has run a window: a short attempt, or the first poll after a failure, never waits for it."""

    def __init__(
        self,
        job_dir: Path,
        attempt: int,
        job_id: int,
        judge: SlowJudge | Callable[[], SlowJudge | None] | None,
        policy: str,
    ) -> None:
        self.job_dir, self.attempt, self.job_id = job_dir, attempt, job_id
        self._make = judge if callable(judge) else None
        self.judge = None if callable(judge) else judge
        self.policy = policy
        self.nodes: tuple[str, ...] = ()
        self._since = time.monotonic()

    @classmethod
    def for_attempt(
        cls,
        job_dir: Path,
        attempt: int,
        job_id: int,
        site_file: str,
        hosts: list[str],
        environ: Mapping[str, str],
    ) -> SlowWatch:
        policy = environ.get(POLICY_ENV, "warn") or "warn"

        def make() -> SlowJudge | None:
            return judge_for(job_dir, attempt, site_file, hosts)

        return cls(job_dir, attempt, job_id, make, policy)

    def look(self) -> bool:
        """True once: when a slow node must end the attempt (the stop is requested)."""
        if self._make is not None and time.monotonic() - self._since >= WINDOW:
            self.judge, self._make = self._make(), None
        if self.judge is None or self.nodes:
            return False
        try:
            marks = self.judge.look(time.time())
        except OSError:
            return False
        for mark in marks:
            where = f" ({mark.supernode})" if mark.supernode else ""
            print(
                f"snrun: slow node {mark.node}{where}: {mark.evidence}", file=sys.stderr, flush=True
            )
        if not marks or self.policy != "requeue":
            return False
        self.nodes = tuple(m.node for m in marks)
        reason = f"slow node(s) {','.join(self.nodes)}: requeued without them"
        failfast.request_stop(self.job_dir, self.attempt, (), reason)
        ledger.append(
            self.job_dir,
            "slow_node",
            attempt=self.attempt,
            job_id=self.job_id,
            nodes=list(self.nodes),
            evidence=[m.evidence for m in marks],
        )
        return True
