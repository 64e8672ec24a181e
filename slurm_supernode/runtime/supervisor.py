"""The supervisor: the batch step of every snrun job, as a small state machine.

``run_attempt`` runs one srun step (an agent per node, each running torchrun) and returns an
``AttemptResult``; the pure ``classify.decide`` turns it and the chain's history into a
``Decision``; ``act`` carries it out through the Slurm layer: restart inside the allocation,
requeue the same job with bad nodes excluded (released at once: Slurm alone waits 120 s; with
``--requeue=expedite`` Slurm reruns it at once itself), or submit a fresh job with
``--exclude``. SIGUSR2 before the time limit goes to the training processes (checkpoint), then
the job requeues itself; SIGTERM is forwarded and Slurm decides.
Everything is recorded in the ledger.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from slurm_supernode.chain import ledger
from slurm_supernode.chain.causes import Action, Cause
from slurm_supernode.errors import SlurmError, SnrunError
from slurm_supernode.hostlist import fold
from slurm_supernode.jobenv import JobEnvironment
from slurm_supernode.launch.inputs import load_inputs
from slurm_supernode.runtime import slurm_actions
from slurm_supernode.runtime.agent_plan import master_port
from slurm_supernode.runtime.agent_step import srun_command
from slurm_supernode.runtime.array_task_env import sweep_env
from slurm_supernode.runtime.classify import (
    AttemptResult,
    Decision,
    ExitCode,
    PastAttempt,
    StopSignal,
    decide,
)
from slurm_supernode.runtime.fail_fast_watch import FailFastWatch
from slurm_supernode.runtime.failure_point import failure_point
from slurm_supernode.runtime.failure_watch import failed_by_time
from slurm_supernode.runtime.hang_watch import HEARTBEAT, HangWatch, read_progress
from slurm_supernode.runtime.preflight import preflight
from slurm_supernode.runtime.release import Preference, preferred_supernode, spawn_releaser
from slurm_supernode.runtime.slow_watch import SlowWatch
from slurm_supernode.runtime.slurm_actions import Releaser
from slurm_supernode.runtime.supervisor_config import SupervisorConfig
from slurm_supernode.slurm.steps import start_step


class Supervisor:
    """run() -> ExitCode: attempts until success or a final state."""

    def __init__(self, config: SupervisorConfig, *, releaser: Releaser = spawn_releaser) -> None:
        self.cfg = config
        self.releaser = releaser
        self.signal: StopSignal | None = None
        self._ended_early = False  # the attempt's end is in the ledger before its step ended
        self._step: subprocess.Popen[bytes] | None = None  # the running srun step
        self._slow: SlowWatch | None = None  # the attempt's slow-node watch

    def run(self) -> ExitCode:
        if self._chain().final is not None:  # ended is ended (a cancel before we started...)
            return ExitCode.OK
        old = {s: signal.getsignal(s) for s in (signal.SIGUSR2, signal.SIGTERM)}
        signal.signal(signal.SIGUSR2, self._on_usr2)
        signal.signal(signal.SIGTERM, self._on_term)
        try:
            slurm_actions.link_task(self.cfg)
            self._close_orphan_attempt()
            while True:
                chain = self._chain()
                history = [
                    PastAttempt(Cause(a.cause), a.progress, a.detail, failure_point(a))
                    for a in chain.attempts
                    if a.cause
                ]
                attempt = (chain.attempts[-1].attempt + 1) if chain.attempts else 0
                result = self.run_attempt(attempt)
                decision = decide(result, history, self.cfg.budgets)
                if not self._ended_early:
                    self._record_end(attempt, result, decision)
                self._ended_early = False
                code = self.act(decision)
                if code is not None:
                    return code
                self.signal = None
                time.sleep(min(self.cfg.backoff * attempt, 5 * self.cfg.backoff))
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)

    def run_attempt(self, attempt: int) -> AttemptResult:
        """One attempt: pre-flight health (optional), then the srun step, watched for hangs."""
        cfg = self.cfg
        hosts = list(cfg.hosts)
        nodelist = fold(hosts)
        ledger.append(
            cfg.job_dir,
            "attempt_start",
            attempt=attempt,
            job_id=cfg.job_id,
            nodes=nodelist,
            restart_count=cfg.restart_count,
        )
        if cfg.preflight:
            unhealthy = preflight(cfg, attempt)
            if unhealthy:
                return AttemptResult(
                    step_exit=0, node_exits={}, hosts=hosts, health_failed=unhealthy
                )
        started = time.time()
        argv = srun_command(cfg.python, cfg.job_dir, hosts, cfg.het_size, list(cfg.program_argv))
        self._step = proc = start_step(argv, self._step_env(attempt, nodelist))
        if self.signal is not None:  # a signal came before the step existed: pass it on
            self._forward(self.signal)
        hung, failed_first = self._watch(proc, attempt, started)
        self._step = None
        rc = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
        return self._result(rc, hosts, hung, failed_first)

    def _step_env(self, attempt: int, nodelist: str) -> dict[str, str]:
        """What the step's agents get beside the job's environment."""
        cfg = self.cfg
        return (
            dict(cfg.environ)
            | {
                "SNRUN_ATTEMPT": str(attempt),
                "SNRUN_NODELIST": nodelist,
                "SNRUN_MASTER_PORT": str(master_port(cfg.job_id, attempt)),
                "SNRUN_HEARTBEAT_FILE": str(cfg.job_dir / HEARTBEAT),
                "SNRUN_CHECKPOINT_DIR": cfg.checkpoint_dir,
            }
            | sweep_env(cfg.sweep)
        )

    def _watch(
        self, proc: subprocess.Popen[bytes], attempt: int, started: float
    ) -> tuple[bool, tuple[str, ...]]:
        """Poll the step until it ends: (hung, nodes that failed first). Four watchers look
        at each poll: a slow node ends the step everywhere (runtime/slow_watch); a cancellation
        is recorded at once; a node that fails ends the step everywhere (fail fast); a step
        without progress is dumped and stopped."""
        cfg = self.cfg
        looked_for_cancel = False
        fail_fast = FailFastWatch(cfg, attempt)
        hang = HangWatch(cfg, attempt, started)
        self._slow = slow = SlowWatch.for_attempt(
            cfg.job_dir, attempt, cfg.job_id, cfg.site_file, list(cfg.hosts), cfg.environ
        )
        while proc.poll() is None:
            time.sleep(cfg.poll)
            if not fail_fast.failed_first and self.signal is None and not hang.hung and slow.look():
                fail_fast.stop_requested()  # a slow node: every agent stops (runtime/slow_watch)
            if self.signal is StopSignal.TERM and not looked_for_cancel:
                looked_for_cancel = True
                self._ended_early = self._record_cancel(attempt)
            may_stop = self.signal is None and not (hang.hung or slow.nodes)
            if fail_fast.look(proc, may_stop=may_stop):
                continue
            if not fail_fast.failed_first and not slow.nodes:
                hang.look(proc)
        return hang.hung, fail_fast.failed_first

    def _result(
        self, rc: int, hosts: list[str], hung: bool, failed_first: tuple[str, ...]
    ) -> AttemptResult:
        """The attempt as the classifier sees it: the step's exit, what the ledger holds."""
        progress, _ = read_progress(self.cfg.job_dir)
        last = self._chain().attempts[-1]
        return AttemptResult(
            container_failed=dict(last.container_failed),
            imex_failed=dict(last.imex_failed),
            container_unstarted=tuple(last.container_unstarted),
            step_exit=rc,
            node_exits=last.node_exits,
            hosts=hosts,
            bad_nodes=self._bad_nodes() if rc != 0 else [],
            signal=self.signal,
            hung=hung,
            progress=progress,
            cancelled=self.signal is StopSignal.TERM and self._cancelled(),
            failed_first=failed_by_time(ledger.read(self.cfg.job_dir), last.attempt, failed_first),
            config_errors=last.config_errors,
            rank_errors=last.rank_errors,
            failure_point=failure_point(last),
            slow_nodes=self._slow.nodes if self._slow else (),
        )

    def act(self, d: Decision) -> ExitCode | None:
        """Carry out the decision; an exit code ends the supervisor."""
        cfg = self.cfg
        if d.action is Action.COMPLETE:
            ledger.append_final(cfg.job_dir, job_id=cfg.job_id, state="COMPLETED", reason=d.detail)
            return ExitCode.OK
        if d.action is Action.RESTART:
            return None
        if d.action is Action.LEAVE_TO_SLURM:
            return ExitCode.SIGNALLED  # the next run (if Slurm requeues) goes on from here
        if d.action in (Action.REQUEUE, Action.RESUBMIT):
            exclude = self._chain_exclusions(d.exclude)
            requeue_error: SlurmError | None = None
            why = d.detail
            prefer = self._preference(d) if d.action is Action.REQUEUE else None
            if (
                d.action is Action.REQUEUE
                and (exclude or prefer)
                and not slurm_actions.releaser_lives()
            ):
                # the exclusions would die with the releaser: a fresh job carries them itself
                why = f"{d.detail}; the releaser dies with the job here (proctrack/cgroup)"
            elif d.action is Action.REQUEUE:
                try:
                    how = slurm_actions.requeue(cfg, self.releaser, exclude, prefer)
                    ledger.append(
                        cfg.job_dir, "requeued", job_id=cfg.job_id, exclude=list(exclude), how=how
                    )
                    return ExitCode.OK
                except SlurmError as exc:
                    requeue_error = exc  # not requeueable here: a fresh job instead
            try:
                new_id = slurm_actions.resubmit(cfg, exclude)
            except SlurmError as exc2:
                refused = f"requeue failed ({requeue_error}); " if requeue_error else ""
                reason = f"{d.detail}; {refused}resubmit failed ({exc2})"
                ledger.append_final(cfg.job_dir, job_id=cfg.job_id, state="FAILED", reason=reason)
                return slurm_actions.end_failed(cfg)
            ledger.append(
                cfg.job_dir,
                "resubmitted",
                job_id=cfg.job_id,
                new_job_id=new_id,
                reason=str(requeue_error) if requeue_error else why,
            )
            slurm_actions.move_dependents(cfg)  # before this job ends 0: afterok must not see it
            return ExitCode.OK
        ledger.append_final(cfg.job_dir, job_id=cfg.job_id, state="FAILED", reason=d.detail)
        return slurm_actions.end_failed(cfg)

    def _on_usr2(self, _signum: int, _frame: object) -> None:
        self.signal = self.signal or StopSignal.USR2
        self._forward(StopSignal.USR2)  # srun forwards it to every agent

    def _on_term(self, _signum: int, _frame: object) -> None:
        self.signal = StopSignal.TERM
        self._forward(StopSignal.TERM)

    def _forward(self, sig: StopSignal) -> None:
        proc = self._step
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGUSR2 if sig is StopSignal.USR2 else signal.SIGTERM)

    def _chain(self) -> ledger.Chain:
        return ledger.fold(ledger.read(self.cfg.job_dir))

    def _cancelled(self) -> bool:
        """Was the SIGTERM a cancellation? `snrun cancel` marks the chain first; a plain
        scancel shows in Slurm's job state (CANCELLED while the job completes)."""
        if (self._chain().final or {}).get("state") == "CANCELLED":
            return True
        from slurm_supernode.slurm.job_lookup import controller_jobs

        try:
            infos = controller_jobs(self.cfg.job_id)
        except SlurmError:
            return False
        return any(info.state.base == "CANCELLED" for info in infos)

    def _bad_nodes(self) -> list[str]:
        from slurm_supernode.slurm.nodes import node_infos

        try:
            infos = node_infos(list(self.cfg.hosts))
        except SlurmError:
            return []
        return [info.name for info in infos if not info.usable]

    def _close_orphan_attempt(self) -> None:
        """An attempt without an end means Slurm requeued the job under us (node failure)."""
        chain = self._chain()
        if chain.attempts and chain.attempts[-1].end is None and self.cfg.restart_count > 0:
            last = chain.attempts[-1]
            ledger.append(
                self.cfg.job_dir,
                "attempt_end",
                attempt=last.attempt,
                job_id=last.job_id,
                exit_code=None,
                cause=Cause.NODE_FAILURE.value,
                action=Action.REQUEUE.value,
                detail="job requeued by Slurm while the attempt ran (node lost)",
            )

    def _record_cancel(self, attempt: int) -> bool:
        """A SIGTERM that is a cancellation (`snrun cancel` marked the chain, or Slurm says
        CANCELLED): record the attempt's end at once, while Slurm's KillWait runs. Waiting for
        the step first loses the record when the step takes longer than KillWait to die (a
        loaded machine) and Slurm's SIGKILL ends the supervisor."""
        if not self._cancelled():
            return False
        progress, _ = read_progress(self.cfg.job_dir)
        result = AttemptResult(
            step_exit=128 + signal.SIGTERM,
            node_exits={},
            hosts=list(self.cfg.hosts),
            signal=StopSignal.TERM,
            cancelled=True,
            progress=progress,
        )
        self._record_end(attempt, result, decide(result, [], self.cfg.budgets))
        return True

    def _record_end(self, attempt: int, result: AttemptResult, d: Decision) -> None:
        ledger.append(
            self.cfg.job_dir,
            "attempt_end",
            attempt=attempt,
            job_id=self.cfg.job_id,
            exit_code=result.step_exit,
            cause=d.cause.value,
            action=d.action.value,
            detail=d.detail,
            progress=result.progress,
            exclude=list(d.exclude),
        )

    def _chain_exclusions(self, new: tuple[str, ...]) -> tuple[str, ...]:
        """Every node the chain has excluded so far, plus ``new``: a requeue must not bring back
        a node an earlier attempt found bad."""
        seen: dict[str, None] = {}
        for rec in ledger.read(self.cfg.job_dir):
            if rec["event"] == "attempt_end":
                seen.update(dict.fromkeys(rec.get("exclude") or []))
        seen.update(dict.fromkeys(new))
        return tuple(seen)

    def _preference(self, d: Decision) -> Preference | None:
        if d.action is not Action.REQUEUE or not d.exclude:
            return None
        from slurm_supernode.site.loader import load_site

        try:
            site = load_site(self.cfg.site_file)
        except SnrunError:
            return None
        return preferred_supernode(site, list(self.cfg.hosts), d.exclude, self.cfg.het_size)


def run_supervisor(
    job_dir: Path, program_argv: list[str], environ: Mapping[str, str] | None = None
) -> int:
    """Entry of ``snrun supervise``: returns the batch script's exit code."""

    environ = dict(os.environ if environ is None else environ)
    config = SupervisorConfig.from_job(
        job_dir, load_inputs(job_dir), JobEnvironment.from_environ(environ), environ, program_argv
    )
    return int(Supervisor(config).run())
