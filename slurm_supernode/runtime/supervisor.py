"""The supervisor: the batch step of every snrun job.

It runs one srun step (an agent per node, each running torchrun), records every attempt in
the ledger, classifies failures and acts, fastest first: restart inside the allocation,
requeue the same job with bad nodes excluded (released at once: Slurm alone waits 120 s),
or submit a fresh job with ``--exclude``. SIGUSR2 before the time limit goes to the training
processes (checkpoint), then the job requeues itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from slurm_supernode.errors import SlurmError, SnrunError
from slurm_supernode.hostlist import fold
from slurm_supernode.launch.inputs import load_inputs
from slurm_supernode.runtime import ledger
from slurm_supernode.runtime.agent import allocation_hosts, master_port
from slurm_supernode.runtime.classify import (
    AttemptResult,
    Decision,
    decide,
    default_budgets,
)
from slurm_supernode.runtime.release import Preference, preferred_supernode, spawn_releaser

HEARTBEAT = "heartbeat"


def srun_command(
    python: str, job_dir: Path, hosts: list[str], het_size: int, program_argv: list[str]
) -> list[str]:
    """One task per node across the whole allocation (every component of a het job)."""
    cmd = ["srun", "--kill-on-bad-exit=0", "--ntasks-per-node=1", "--export=ALL"]
    if het_size > 1:
        cmd.append("--het-group=" + ",".join(str(i) for i in range(het_size)))
    else:
        cmd += [f"--nodes={len(hosts)}", f"--ntasks={len(hosts)}"]
    cmd += [python, "-m", "slurm_supernode", "agent", "--job-dir", str(job_dir)]
    return [*cmd, "--", *program_argv] if program_argv else cmd


def preflight_failures(
    python: str, job_dir: Path, site_file: str, hosts: list[str], het_size: int, attempt: int
) -> list[str]:
    """Run `snrun health` on every node (one srun step); nodes whose checks are critical."""
    import json

    out_dir = job_dir / "health"
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = srun_command(python, job_dir, hosts, het_size, [])
    head = cmd[: cmd.index(python)]
    # %t (task id), not %N: with several slurmd per host %N is the host's name, not the node's.
    pattern = str(out_dir / f"attempt{attempt}.task%t.json")
    check = [python, "-m", "slurm_supernode", "health", "--site", site_file, "--json"]
    subprocess.run([*head, f"--output={pattern}", *check], check=False, timeout=300)
    status: dict[str, int] = {}
    for path in out_dir.glob(f"attempt{attempt}.task*.json"):
        try:
            result = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        status[str(result.get("node"))] = int(result.get("status", 3))
    # A node that gave no answer failed too.
    return [h for h in hosts if status.get(h, 2) == 2]


class _Signals:
    """Remember Slurm's signals and forward them to the running step."""

    def __init__(self) -> None:
        self.got: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        signal.signal(signal.SIGUSR2, self._usr2)
        signal.signal(signal.SIGTERM, self._term)

    def _usr2(self, _signum: int, _frame: object) -> None:
        self.got = self.got or "USR2"
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGUSR2)  # srun forwards it to every agent

    def _term(self, _signum: int, _frame: object) -> None:
        self.got = "TERM"
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)


def _bad_nodes(hosts: list[str]) -> list[str]:
    from slurm_supernode.slurm.nodes import node_infos

    try:
        infos = node_infos(hosts)
    except SlurmError:
        return []
    return [info.name for info in infos if not info.usable]


def _read_progress(job_dir: Path) -> tuple[str | None, float | None]:
    path = job_dir / HEARTBEAT
    try:
        first = path.read_text().strip().splitlines()[:1]  # the marker is the first line
        return (first[0][:200] if first else None), path.stat().st_mtime
    except OSError:
        return None, None


def _close_orphan_attempt(job_dir: Path, job_id: int, restart_count: int) -> None:
    """An attempt without an end means Slurm requeued the job under us (node failure)."""
    chain = ledger.fold(ledger.read(job_dir))
    if chain.attempts and chain.attempts[-1].end is None and restart_count > 0:
        last = chain.attempts[-1]
        ledger.append(
            job_dir,
            "attempt_end",
            attempt=last.attempt,
            job_id=last.job_id,
            exit_code=None,
            cause="node_failure",
            action="requeue",
            detail="job requeued by Slurm while the attempt ran (node lost)",
        )


def requeue_self(
    job_dir: Path, job_id: int, exclude: tuple[str, ...], prefer: Preference | None = None
) -> None:
    """Requeue this job; a detached releaser excludes bad nodes, keeps the job in its super
    node when spares allow, and lets it start at once."""
    from slurm_supernode.slurm import jobs

    spawn_releaser(job_id, exclude, job_dir / "logs" / f"release-{job_id}.log", prefer)
    jobs.requeue(job_id, release=False)


def resubmit(job_dir: Path, job_id: int, exclude: tuple[str, ...]) -> int:
    """Fresh job for the same chain, bad nodes excluded, after this one ends."""
    import json

    from slurm_supernode.launch.jobdir import link_job_id
    from slurm_supernode.slurm import jobs

    request = json.loads((job_dir / "request.json").read_text())
    args = [f"--dependency=afterany:{job_id}"]
    if exclude:
        args.append(f"--exclude={fold(exclude)}")
    new_id = jobs.submit((job_dir / "job.sh").read_text(), args + request["sbatch_args"])
    link_job_id(job_dir.parent, job_dir, new_id)
    return new_id


def budgets_for(env: Mapping[str, str], inputs: Mapping[str, Any]) -> dict[str, int]:
    """Restart budgets of this job: the site's `restarts:` (from plan.json), then
    --max-restarts (the script exports it as SNRUN_MAX_RESTARTS; plan.json keeps it too)."""
    given = env.get("SNRUN_MAX_RESTARTS") or inputs.get("max_restarts")
    max_restarts = None if given in (None, "") else int(given)
    return default_budgets(max_restarts, inputs.get("site_restarts"))


def run_supervisor(
    job_dir: Path, program_argv: list[str], environ: Mapping[str, str] | None = None
) -> int:
    """Run attempts until success or a final state; returns the batch script's exit code."""
    env = dict(os.environ if environ is None else environ)
    inputs = load_inputs(job_dir)
    program_argv = program_argv or list(inputs["program_argv"])
    job_id = int(env.get("SLURM_JOB_ID", "0") or 0)
    restart_count = int(env.get("SLURM_RESTART_COUNT", "0") or 0)
    hosts = allocation_hosts(env)
    het_size = int(env.get("SLURM_HET_SIZE", "0") or 0)
    budgets = budgets_for(env, inputs)
    hang_timeout = float(env.get("SNRUN_HANG_TIMEOUT") or inputs.get("hang_timeout") or 0)
    # Before an attempt's first heartbeat, only a start that takes this long counts as a hang.
    hang_startup = float(env.get("SNRUN_HANG_STARTUP") or max(600.0, hang_timeout))
    python = inputs.get("python") or sys.executable
    if (ledger.fold(ledger.read(job_dir)).final or {}).get("state") == "CANCELLED":
        return 0
    signals = _Signals()
    _close_orphan_attempt(job_dir, job_id, restart_count)

    hang_limit = hang_timeout
    while True:
        hang_timeout = hang_limit
        chain = ledger.fold(ledger.read(job_dir))
        history = [(a.cause, a.progress, a.detail) for a in chain.attempts if a.cause]
        attempt = (chain.attempts[-1].attempt + 1) if chain.attempts else 0
        nodelist = fold(hosts)
        ledger.append(
            job_dir,
            "attempt_start",
            attempt=attempt,
            job_id=job_id,
            nodes=nodelist,
            restart_count=restart_count,
        )
        step_env = env | {
            "SNRUN_ATTEMPT": str(attempt),
            "SNRUN_NODELIST": nodelist,
            "SNRUN_MASTER_PORT": str(master_port(job_id, attempt)),
            "SNRUN_HEARTBEAT_FILE": str(job_dir / HEARTBEAT),
            "SNRUN_CHECKPOINT_DIR": env.get("SNRUN_CHECKPOINT_DIR") or str(job_dir / "checkpoints"),
        }
        unhealthy = []
        if inputs.get("preflight"):
            site_file = str(inputs.get("site_file") or job_dir / "site.yaml")
            unhealthy = preflight_failures(python, job_dir, site_file, hosts, het_size, attempt)
        if unhealthy:
            result = AttemptResult(step_exit=0, node_exits={}, hosts=hosts, health_failed=unhealthy)
            decision = decide(result, history, budgets)
            _record_end(job_dir, attempt, job_id, 0, decision, None)
            prefer = _preference(inputs, hosts, decision, het_size)
            code = _act(job_dir, job_id, decision, prefer)
            if code is not None:
                return code
            continue
        started = time.time()
        proc = subprocess.Popen(
            srun_command(python, job_dir, hosts, het_size, program_argv), env=step_env
        )
        signals.proc = proc
        hung = False
        while proc.poll() is None:
            time.sleep(0.5)
            if hang_timeout > 0 and not hung:
                marker, mtime = _read_progress(job_dir)
                fresh = mtime is not None and mtime > started
                if fresh and (marker or "").startswith("done"):
                    hang_timeout = 0.0  # the script finished its work: shutdown is no hang
                    continue
                if fresh:  # this attempt reports progress
                    hung = time.time() - mtime > hang_timeout
                else:  # still starting (imports, rendezvous): a longer grace
                    hung = time.time() - started > hang_startup
                if hung:
                    proc.send_signal(signal.SIGTERM)
        rc = proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
        signals.proc = None
        progress, _ = _read_progress(job_dir)
        node_exits = ledger.fold(ledger.read(job_dir)).attempts[-1].node_exits
        result = AttemptResult(
            step_exit=rc,
            node_exits=node_exits,
            hosts=hosts,
            bad_nodes=_bad_nodes(hosts) if rc != 0 else [],
            signal=signals.got,
            hung=hung,
            progress=progress,
        )
        decision = decide(result, history, budgets)
        _record_end(job_dir, attempt, job_id, rc, decision, progress)
        prefer = _preference(inputs, hosts, decision, het_size)
        code = _act(job_dir, job_id, decision, prefer)
        if code is not None:
            return code
        signals.got = None
        time.sleep(
            min(1.0 * attempt, 5.0)
        )  # back-off: none for the first restart, then 1 s more each


def _record_end(
    job_dir: Path, attempt: int, job_id: int, rc: int, d: Decision, progress: str | None
) -> None:
    ledger.append(
        job_dir,
        "attempt_end",
        attempt=attempt,
        job_id=job_id,
        exit_code=rc,
        cause=d.cause,
        action=d.action,
        detail=d.detail,
        progress=progress,
        exclude=list(d.exclude),
    )


def _chain_exclusions(job_dir: Path, new: tuple[str, ...]) -> tuple[str, ...]:
    """Every node the chain has excluded so far, plus ``new``: a requeue must not bring back a
    node an earlier attempt found bad."""
    seen: dict[str, None] = {}
    for rec in ledger.read(job_dir):
        if rec["event"] == "attempt_end":
            seen.update(dict.fromkeys(rec.get("exclude") or []))
    seen.update(dict.fromkeys(new))
    return tuple(seen)


def _preference(inputs: dict, hosts: list[str], d: Decision, het_size: int) -> Preference | None:
    if d.action != "requeue" or not d.exclude:
        return None
    from slurm_supernode.site.loader import load_site

    try:
        site = load_site(inputs["site_file"])
    except SnrunError:
        return None
    return preferred_supernode(site, hosts, d.exclude, het_size)


def _act(job_dir: Path, job_id: int, d: Decision, prefer: Preference | None = None) -> int | None:
    """Carry out the decision; an int ends the supervisor with that exit code."""
    if d.action == "none":
        ledger.append(job_dir, "final", job_id=job_id, state="COMPLETED", reason=d.detail)
        return 0
    if d.action == "restart":
        return None
    if d.action == "slurm":
        return 143  # Slurm ends or requeues the job; the next run (if any) goes on from here
    if d.action == "requeue":
        exclude = _chain_exclusions(job_dir, d.exclude)
        try:
            requeue_self(job_dir, job_id, exclude, prefer)
            ledger.append(job_dir, "requeued", job_id=job_id, exclude=list(exclude))
            return 0
        except SlurmError as exc:
            try:
                new_id = resubmit(job_dir, job_id, exclude)
            except SlurmError as exc2:
                reason = f"{d.detail}; requeue failed ({exc}); resubmit failed ({exc2})"
                ledger.append(job_dir, "final", job_id=job_id, state="FAILED", reason=reason)
                return 1
            ledger.append(job_dir, "resubmitted", job_id=job_id, new_job_id=new_id, reason=str(exc))
            return 0
    ledger.append(job_dir, "final", job_id=job_id, state="FAILED", reason=d.detail)
    return 1
