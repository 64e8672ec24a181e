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

import contextlib
import json
import math
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from slurm_supernode.errors import SlurmError, SnrunError
from slurm_supernode.forensics.hang import dump_stacks, hang_timeout, is_hung, last_activity
from slurm_supernode.hostlist import fold
from slurm_supernode.jobenv import JobEnvironment
from slurm_supernode.launch.inputs import JobInputs, load_inputs
from slurm_supernode.runtime import failfast, ledger
from slurm_supernode.runtime.agent import master_port
from slurm_supernode.runtime.classify import (
    Action,
    AttemptResult,
    Cause,
    Decision,
    ExitCode,
    NodeHealth,
    PastAttempt,
    StopSignal,
    decide,
    default_budgets,
)
from slurm_supernode.runtime.failure_point import failure_point
from slurm_supernode.runtime.release import Preference, preferred_supernode, spawn_releaser
from slurm_supernode.runtime.slow_watch import SlowWatch
from slurm_supernode.slurm.steps import run_step, start_step, step_command

HEARTBEAT = "heartbeat"
Releaser = Callable[[int, tuple[str, ...], Path, "Preference | None", bool], None]


def expedited(sbatch_args: Sequence[str]) -> bool:
    """Was the job submitted with ``--requeue=expedite``? The last requeue option wins (snrun
    renders one where the cluster allows it; ``--sbatch`` or ``#SBATCH`` may override it)."""
    mode = None
    for arg in sbatch_args:
        if arg in ("--requeue", "--no-requeue") or arg.startswith("--requeue="):
            mode = arg
    return mode == "--requeue=expedite"


def resubmission_args(sbatch_args: Sequence[str]) -> list[str]:
    """The job's sbatch options for a fresh job of the same chain, without the ones that held
    only for its first submission: a dependency (-d; the chain has started, so it was met,
    and sbatch's last --dependency would replace ``afterany:<this job>``) and a hold."""
    out: list[str] = []
    skip = False
    for arg in sbatch_args:
        if skip:
            skip = False
            continue
        if arg in ("-d", "--dependency"):
            skip = True
            continue
        if arg.startswith(("--dependency=", "-d")) or arg in ("--hold", "-H"):
            continue
        out.append(arg)
    return out


def agent_command(python: str, job_dir: Path, program_argv: Sequence[str]) -> list[str]:
    cmd = [python, "-m", "slurm_supernode", "agent", "--job-dir", str(job_dir)]
    return [*cmd, "--", *program_argv] if program_argv else cmd


def srun_command(
    python: str, job_dir: Path, hosts: Sequence[str], het_size: int, program_argv: list[str]
) -> list[str]:
    """One agent per node across the whole allocation (every component of a het job)."""
    return step_command(len(hosts), het_size, agent_command(python, job_dir, program_argv))


def budgets_for(env: JobEnvironment, inputs: JobInputs) -> dict[Cause, int]:
    """Restart budgets of this job: the site's `restarts:` (from the job inputs), then
    --max-restarts (the script exports it as SNRUN_MAX_RESTARTS; the inputs keep it too)."""
    given = env.max_restarts if env.max_restarts is not None else inputs.max_restarts
    return default_budgets(given, inputs.site_restarts)


@dataclass(frozen=True)
class SupervisorConfig:
    """Everything the loop needs, from the job inputs and the job's environment."""

    job_dir: Path
    job_id: int
    restart_count: int
    hosts: tuple[str, ...]
    het_size: int
    python: str
    program_argv: tuple[str, ...]
    budgets: Mapping[Cause, int]
    hang_timeout: float  # 0: no hang detection
    hang_startup: float  # before an attempt's first heartbeat
    preflight: bool
    site_file: str
    sbatch_args: tuple[str, ...]
    checkpoint_dir: str
    expedite: bool = False  # --requeue=expedite: Slurm reruns a requeued job at once
    # end the attempt on every node when one node's ranks fail (runtime/failfast.py; on unless
    # SNRUN_FAIL_FAST=0): the other nodes' agents stop their torchrun and still record
    fail_fast: bool = True
    # after a stop request, how long the agents have to end the step before srun is signalled
    # (a safety net for an agent that cannot act: torchrun's own stop takes up to 30 s)
    stop_grace: float = 60.0
    # a sweep's task (JobInputs.sweep): {"dir", "task", "params"}; None: a plain job
    sweep: Mapping[str, object] | None = None
    poll: float = 0.2  # seconds between looks at the step
    backoff: float = 1.0  # pause before restart n: min(n * backoff, 5 * backoff)
    environ: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def from_job(
        cls,
        job_dir: Path,
        inputs: JobInputs,
        env: JobEnvironment,
        environ: Mapping[str, str],
        program_argv: Sequence[str] = (),
    ) -> SupervisorConfig:
        hang = hang_timeout(env.hang_timeout, inputs.hang_timeout)  # on by default
        startup = env.hang_startup if env.hang_startup is not None else inputs.hang_startup
        return cls(
            job_dir=job_dir,
            job_id=env.job_id or 0,
            restart_count=env.restart_count,
            hosts=tuple(env.hosts()),
            het_size=env.het_size,
            python=inputs.python,
            program_argv=tuple(program_argv or inputs.program_argv),
            budgets=budgets_for(env, inputs),
            hang_timeout=hang,
            # no first heartbeat within it: only when set (a job may never write heartbeats)
            hang_startup=startup if startup is not None else math.inf,
            preflight=inputs.preflight,
            site_file=inputs.site_file,
            sbatch_args=tuple(inputs.request["sbatch_args"]),
            checkpoint_dir=env.checkpoint_dir or str(job_dir / "checkpoints"),
            expedite=expedited(inputs.request["sbatch_args"]),
            fail_fast=failfast.enabled(environ),
            sweep=inputs.sweep,
            environ=dict(environ),
        )

    @property
    def jobs_root(self) -> Path:
        """Where ``by-id`` links go: the jobs folder (a sweep's task lies two levels deeper)."""
        if self.sweep:
            return Path(str(self.sweep["dir"])).parent
        return self.job_dir.parent

    @property
    def sweep_dir(self) -> Path | None:
        return Path(str(self.sweep["dir"])) if self.sweep else None


class Supervisor:
    """run() -> ExitCode: attempts until success or a final state."""

    def __init__(self, config: SupervisorConfig, *, releaser: Releaser = spawn_releaser) -> None:
        self.cfg = config
        self.releaser = releaser
        self.signal: StopSignal | None = None
        self._ended_early = False  # the attempt's end is in the ledger before its step ended
        self._step: subprocess.Popen[bytes] | None = None  # the running srun step
        self._slow: SlowWatch | None = None  # the attempt's slow-node watch

    # ----- the loop ---------------------------------------------------------------------------

    def run(self) -> ExitCode:
        if self._chain().final is not None:  # ended is ended (a cancel before we started...)
            return ExitCode.OK
        old = {s: signal.getsignal(s) for s in (signal.SIGUSR2, signal.SIGTERM)}
        signal.signal(signal.SIGUSR2, self._on_usr2)
        signal.signal(signal.SIGTERM, self._on_term)
        try:
            self._link_task()
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
            unhealthy = self.preflight(attempt)
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
        """Poll the step until it ends: (hung, nodes that failed first). A node that fails
        ends the step everywhere (fail fast); a step without progress is dumped and stopped."""
        cfg = self.cfg
        hosts = list(cfg.hosts)
        hung = False
        failed_first: tuple[str, ...] = ()
        stop_at = None  # when the stop request was written
        hang_timeout = cfg.hang_timeout
        activity, looked = started, 0.0
        looked_for_cancel = False
        failures = _FailureWatch(cfg.job_dir, attempt)
        self._slow = slow = SlowWatch.for_attempt(
            cfg.job_dir, attempt, cfg.job_id, cfg.site_file, hosts, cfg.environ
        )
        while proc.poll() is None:
            time.sleep(cfg.poll)
            if not failed_first and self.signal is None and not hung and slow.look():
                stop_at = time.time()  # a slow node: every agent stops (runtime/slow_watch)
            if self.signal is StopSignal.TERM and not looked_for_cancel:
                looked_for_cancel = True
                self._ended_early = self._record_cancel(attempt)
            if (
                cfg.fail_fast
                and not failed_first
                and self.signal is None
                and not (hung or slow.nodes)
            ):
                failed_first = failures()
                if failed_first:  # fail fast: no healthy node waits in torchrun's exit barrier
                    stop_at = self._request_stop(attempt, failed_first)
                    continue
            if stop_at is not None and time.time() - stop_at > cfg.stop_grace:
                stop_at = None  # the agents did not end the step: end it from outside
                proc.send_signal(signal.SIGTERM)
            if hang_timeout > 0 and not hung and not failed_first and not slow.nodes:
                marker, mtime = self._progress()
                fresh = mtime is not None and mtime > started
                if fresh and (marker or "").startswith("done"):
                    hang_timeout = 0.0  # the script finished its work: shutdown is no hang
                    continue
                now = time.time()
                if not fresh and now - looked >= min(5.0, hang_timeout / 4):
                    activity, looked = last_activity(cfg.job_dir, attempt, started), now
                hung = is_hung(now, started, hang_timeout, cfg.hang_startup, mtime, activity)
                if hung:  # evidence first: where every rank is stuck
                    dump_stacks(cfg.python, cfg.job_id, hosts, cfg.job_dir, attempt, 120.0)
                    proc.send_signal(signal.SIGTERM)
        return hung, failed_first

    def _result(
        self, rc: int, hosts: list[str], hung: bool, failed_first: tuple[str, ...]
    ) -> AttemptResult:
        """The attempt as the classifier sees it: the step's exit, what the ledger holds."""
        progress, _ = self._progress()
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
            if d.action is Action.REQUEUE and (exclude or prefer) and not self._releaser_lives():
                # the exclusions would die with the releaser: a fresh job carries them itself
                why = f"{d.detail}; the releaser dies with the job here (proctrack/cgroup)"
            elif d.action is Action.REQUEUE:
                try:
                    how = self.requeue(exclude, prefer)
                    ledger.append(
                        cfg.job_dir, "requeued", job_id=cfg.job_id, exclude=list(exclude), how=how
                    )
                    return ExitCode.OK
                except SlurmError as exc:
                    requeue_error = exc  # not requeueable here: a fresh job instead
            try:
                new_id = self.resubmit(exclude)
            except SlurmError as exc2:
                refused = f"requeue failed ({requeue_error}); " if requeue_error else ""
                reason = f"{d.detail}; {refused}resubmit failed ({exc2})"
                ledger.append_final(cfg.job_dir, job_id=cfg.job_id, state="FAILED", reason=reason)
                return self._failed()
            ledger.append(
                cfg.job_dir,
                "resubmitted",
                job_id=cfg.job_id,
                new_job_id=new_id,
                reason=str(requeue_error) if requeue_error else why,
            )
            self._move_dependents()  # before this job ends 0: afterok must not see it
            return ExitCode.OK
        ledger.append_final(cfg.job_dir, job_id=cfg.job_id, state="FAILED", reason=d.detail)
        return self._failed()

    # ----- actions through the Slurm layer ----------------------------------------------------

    def requeue(self, exclude: tuple[str, ...], prefer: Preference | None) -> str:
        """Requeue this job; a detached releaser excludes bad nodes, keeps the job in its super
        node when spares allow, and lets it start at once. Returns how, for the ledger.

        With ``--requeue=expedite`` Slurm reruns the job at once by itself: with nothing to
        exclude or pin, a plain requeue is all (``expedite``). Otherwise the rerun would start
        before anything could change it (a running job's ExcNodeList cannot be updated), so
        the job is requeued held and the releaser lifts the hold after its updates
        (``expedite-held``). Elsewhere: requeue, the releaser starts it (``released``)."""
        from slurm_supernode.slurm import jobs

        cfg = self.cfg
        if cfg.expedite and not exclude and prefer is None:
            jobs.requeue(cfg.job_id, release=False)
            return "expedite"
        log = cfg.job_dir / "logs" / f"release-{cfg.job_id}.log"
        self.releaser(cfg.job_id, exclude, log, prefer, cfg.expedite)
        jobs.requeue(cfg.job_id, hold=cfg.expedite, release=False)
        return "expedite-held" if cfg.expedite else "released"

    def resubmit(self, exclude: tuple[str, ...]) -> int:
        """Fresh job for the same chain, bad nodes excluded, after this one ends."""
        from slurm_supernode.launch.jobdir import link_job_id
        from slurm_supernode.slurm import jobs

        cfg = self.cfg
        args = [f"--dependency=afterany:{cfg.job_id}"]
        if exclude:
            args.append(f"--exclude={fold(exclude)}")
        if cfg.sweep:  # a one-task array: the script finds tasks/<i> by SLURM_ARRAY_TASK_ID
            args.append(f"--array={cfg.sweep['task']}")
        script = (cfg.job_dir / "job.sh").read_text()
        new_id = jobs.submit(script, args + resubmission_args(cfg.sbatch_args))
        link_job_id(cfg.jobs_root, cfg.job_dir, new_id)
        return new_id

    def _move_dependents(self) -> None:
        """Jobs waiting on this chain (--after) now wait on its new job id (runtime/after.py);
        a dependent that could not be moved is named in the ledger."""
        from slurm_supernode.runtime.after import rewrite_dependents

        try:
            failures = rewrite_dependents(self.cfg.job_dir, self.cfg.sweep_dir)
        except (OSError, ValueError, SnrunError) as exc:
            failures = [str(exc)]
        if failures:
            ledger.append(self.cfg.job_dir, "dependents", job_id=self.cfg.job_id, failed=failures)

    def _link_task(self) -> None:
        """A sweep's task: ``by-id/<its own job id>`` -> its directory (known only now), so
        ``snrun status/logs/attach <id>`` find it. One task runs under the array's own job id,
        whose link names the sweep: that one is kept."""
        cfg = self.cfg
        if cfg.sweep and cfg.job_id:
            from slurm_supernode.launch.jobdir import link_job_id

            link = cfg.jobs_root / "by-id" / str(cfg.job_id)
            with contextlib.suppress(OSError):
                if not os.path.lexists(link):
                    link_job_id(cfg.jobs_root, cfg.job_dir, cfg.job_id)

    def _releaser_lives(self) -> bool:
        """Will the detached releaser outlive this job? Not under proctrack/cgroup, which kills
        every process of the job: a requeue there would lose the exclusions (and an expedited
        one would stay held). Unknown (controller unreachable): as before, yes."""
        from slurm_supernode.slurm.version import detached_process_survives

        try:
            return detached_process_survives()
        except SlurmError:
            return True

    def _failed(self) -> ExitCode:
        """The chain ends FAILED. An expedited job that exits non-zero would be requeued held
        by Slurm (REQUEUE_HOLD, waiting forever): turn its requeue off first."""
        if self.cfg.expedite:
            from slurm_supernode.slurm import jobs

            with contextlib.suppress(SlurmError):
                jobs.update_job(self.cfg.job_id, Requeue=0)
        return ExitCode.FAILED

    def preflight(self, attempt: int) -> list[str]:
        """`snrun health` on every node (one srun step); nodes that are critical or silent."""
        cfg = self.cfg
        out_dir = cfg.job_dir / "health"
        out_dir.mkdir(parents=True, exist_ok=True)
        # %t (task id), not %N: with several slurmd per host %N is the host's name, not the node's.
        pattern = str(out_dir / f"attempt{attempt}.task%t.json")
        check = [cfg.python, "-m", "slurm_supernode", "health", "--site", cfg.site_file, "--json"]
        with contextlib.suppress(SlurmError):  # nodes that gave no answer count as failed below
            run_step(step_command(len(cfg.hosts), cfg.het_size, check, output=pattern))
        status: dict[str, NodeHealth] = {}
        for path in out_dir.glob(f"attempt{attempt}.task*.json"):
            try:
                result = json.loads(path.read_text())
                status[str(result.get("node"))] = NodeHealth(int(result.get("status")))
            except (OSError, ValueError, TypeError):
                continue
        return [h for h in cfg.hosts if status.get(h, NodeHealth.CRITICAL) is NodeHealth.CRITICAL]

    # ----- helpers ----------------------------------------------------------------------------

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

    def _request_stop(self, attempt: int, failed: tuple[str, ...]) -> float:
        """Ask every other node's agent to stop its torchrun (runtime/failfast.py); the ledger
        records the request after the failing node's own record. Returns when."""
        reason = f"{','.join(failed)} failed first"
        failfast.request_stop(self.cfg.job_dir, attempt, failed, reason)
        ledger.append(
            self.cfg.job_dir, "stop_requested", attempt=attempt, job_id=self.cfg.job_id,
            failed=list(failed),
        )  # fmt: skip
        return time.time()

    def _bad_nodes(self) -> list[str]:
        from slurm_supernode.slurm.nodes import node_infos

        try:
            infos = node_infos(list(self.cfg.hosts))
        except SlurmError:
            return []
        return [info.name for info in infos if not info.usable]

    def _progress(self) -> tuple[str | None, float | None]:
        path = self.cfg.job_dir / HEARTBEAT
        try:
            first = path.read_text().strip().splitlines()[:1]  # the marker is the first line
            return (first[0][:200] if first else None), path.stat().st_mtime
        except OSError:
            return None, None

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
        progress, _ = self._progress()
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


class _FailureWatch:
    """Nodes with a rank that raised (``rank_failed``, written by the rank itself) or whose
    agent reported a non-zero exit in ``attempt``, first failure first. The ledger is read
    again only when it grew (the supervisor looks every ``poll``)."""

    def __init__(self, job_dir: Path, attempt: int) -> None:
        self._job_dir, self._attempt, self._size = job_dir, attempt, -1

    def __call__(self) -> tuple[str, ...]:
        try:
            size = ledger.ledger_path(self._job_dir).stat().st_size
        except OSError:
            return ()
        if size == self._size:
            return ()
        self._size = size
        return tuple(
            dict.fromkeys(
                str(rec.get("node"))
                for rec in ledger.read(self._job_dir)
                if rec.get("attempt") == self._attempt
                and (
                    rec["event"] == "rank_failed"
                    or (rec["event"] == "node_exit" and rec.get("exit_code") not in (0, None))
                )
            )
        )


def failed_by_time(
    records: Iterable[dict[str, Any]], attempt: int, first: Sequence[str]
) -> tuple[str, ...]:
    """``first`` (the nodes that failed first, as the supervisor saw them reported) plus the
    nodes with a rank killed by a signal, ordered by when they failed: a signal death is
    recorded by its agent after torchrun's report, later than a peer's error about it, but
    carries when the rank died (``died``). Without ``first`` (no fail fast) nothing is added."""
    if not first:
        return ()
    when: dict[str, float] = {}
    for rec in records:
        if rec.get("attempt") != attempt:
            continue
        node = str(rec.get("node"))
        died = rec.get("died") if rec["event"] == "rank_failed" else None
        failed = rec["event"] == "rank_failed" or (
            rec["event"] == "node_exit"
            and rec.get("exit_code") not in (0, None)
            and not rec.get("stopped")
        )
        if (node in first and failed) or isinstance(died, (int, float)):
            at = float(died) if isinstance(died, (int, float)) else float(rec["time"])
            when[node] = min(at, when.get(node, at))
    nodes = dict.fromkeys([*first, *when])
    return tuple(sorted(nodes, key=lambda n: when.get(n, float("inf"))))


def sweep_env(sweep: Mapping[str, object] | None) -> dict[str, str]:
    """What a sweep's task tells its program: ``SNRUN_SWEEP_TASK``, ``SNRUN_SWEEP_DIR`` and
    ``SNRUN_PARAM_<NAME>`` per parameter (also ``SNRUN_SWEEP_PARAMS``, all as JSON)."""
    if not sweep:
        return {}
    params = dict(sweep.get("params") or {})  # type: ignore[call-overload]
    env = {
        "SNRUN_SWEEP_TASK": str(sweep["task"]),
        "SNRUN_SWEEP_DIR": str(sweep["dir"]),
        "SNRUN_SWEEP_PARAMS": json.dumps(params, sort_keys=True),
    }
    return env | {f"SNRUN_PARAM_{str(k).upper()}": str(v) for k, v in params.items()}


def run_supervisor(
    job_dir: Path, program_argv: list[str], environ: Mapping[str, str] | None = None
) -> int:
    """Entry of ``snrun supervise``: returns the batch script's exit code."""
    import os

    environ = dict(os.environ if environ is None else environ)
    config = SupervisorConfig.from_job(
        job_dir, load_inputs(job_dir), JobEnvironment.from_environ(environ), environ, program_argv
    )
    return int(Supervisor(config).run())


def lost_supervisor(job_dir: Path, rc: int, environ: Mapping[str, str] | None = None) -> int:
    """Entry of ``snrun supervise --lost RC`` (the batch script, after the supervisor died):
    returns the exit code the batch script should end with (the supervisor's own)."""
    import os
    import sys

    from slurm_supernode.runtime.lost import record_lost_supervisor

    env = JobEnvironment.from_environ(dict(os.environ if environ is None else environ))
    inputs = load_inputs(job_dir)
    reason = record_lost_supervisor(
        job_dir, rc, env.job_id or 0, expedited(inputs.request["sbatch_args"])
    )
    if reason:
        print(f"snrun: error: {reason}", file=sys.stderr)
    return rc
