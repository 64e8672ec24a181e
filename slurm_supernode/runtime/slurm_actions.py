"""What the supervisor's decisions do through the Slurm layer: requeue this job (a detached
releaser applies the exclusions), submit a fresh job of the chain, move the chains that wait
on it, link a task's job id, and end a chain FAILED without Slurm holding it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from slurm_supernode.chain import ledger
from slurm_supernode.errors import SlurmError, SnrunError
from slurm_supernode.hostlist import fold
from slurm_supernode.runtime.classify import ExitCode
from slurm_supernode.runtime.release import Preference
from slurm_supernode.runtime.sbatch_argv import resubmission_args
from slurm_supernode.runtime.supervisor_config import SupervisorConfig

Releaser = Callable[[int, tuple[str, ...], Path, "Preference | None", bool], None]


def requeue(
    cfg: SupervisorConfig,
    releaser: Releaser,
    exclude: tuple[str, ...],
    prefer: Preference | None,
) -> str:
    """Requeue this job; a detached releaser excludes bad nodes, keeps the job in its super
    node when spares allow, and lets it start at once. Returns how, for the ledger.

    With ``--requeue=expedite`` Slurm reruns the job at once by itself: with nothing to
    exclude or pin, a plain requeue is all (``expedite``). Otherwise the rerun would start
    before anything could change it (a running job's ExcNodeList cannot be updated), so
    the job is requeued held and the releaser lifts the hold after its updates
    (``expedite-held``). Elsewhere: requeue, the releaser starts it (``released``)."""
    from slurm_supernode.slurm import jobs

    if cfg.expedite and not exclude and prefer is None:
        jobs.requeue(cfg.job_id, release=False)
        return "expedite"
    log = cfg.job_dir / "logs" / f"release-{cfg.job_id}.log"
    releaser(cfg.job_id, exclude, log, prefer, cfg.expedite)
    jobs.requeue(cfg.job_id, hold=cfg.expedite, release=False)
    return "expedite-held" if cfg.expedite else "released"


def resubmit(cfg: SupervisorConfig, exclude: tuple[str, ...]) -> int:
    """Fresh job for the same chain, bad nodes excluded, after this one ends."""
    from slurm_supernode.launch.jobdir import link_job_id
    from slurm_supernode.slurm import jobs

    args = [f"--dependency=afterany:{cfg.job_id}"]
    if exclude:
        args.append(f"--exclude={fold(exclude)}")
    if cfg.sweep:  # a one-task array: the script finds tasks/<i> by SLURM_ARRAY_TASK_ID
        args.append(f"--array={cfg.sweep['task']}")
    script = (cfg.job_dir / "job.sh").read_text()
    new_id = jobs.submit(script, args + resubmission_args(cfg.sbatch_args))
    link_job_id(cfg.jobs_root, cfg.job_dir, new_id)
    return new_id


def move_dependents(cfg: SupervisorConfig) -> None:
    """Jobs waiting on this chain (--after) now wait on its new job id (chain/dependents.py);
    a dependent that could not be moved is named in the ledger."""
    from slurm_supernode.chain.dependents import rewrite_dependents

    try:
        failures = rewrite_dependents(cfg.job_dir, cfg.sweep_dir)
    except (OSError, ValueError, SnrunError) as exc:
        failures = [str(exc)]
    if failures:
        ledger.append(cfg.job_dir, "dependents", job_id=cfg.job_id, failed=failures)


def link_task(cfg: SupervisorConfig) -> None:
    """A sweep's task: ``by-id/<its own job id>`` -> its directory (known only now), so
    ``snrun status/logs/attach <id>`` find it. One task runs under the array's own job id,
    whose link names the sweep: that one is kept."""
    if cfg.sweep and cfg.job_id:
        from slurm_supernode.launch.jobdir import link_job_id

        link = cfg.jobs_root / "by-id" / str(cfg.job_id)
        with contextlib.suppress(OSError):
            if not os.path.lexists(link):
                link_job_id(cfg.jobs_root, cfg.job_dir, cfg.job_id)


def releaser_lives() -> bool:
    """Will the detached releaser outlive this job? Not under proctrack/cgroup, which kills
    every process of the job: a requeue there would lose the exclusions (and an expedited
    one would stay held). Unknown (controller unreachable): as before, yes."""
    from slurm_supernode.slurm.version import detached_process_survives

    try:
        return detached_process_survives()
    except SlurmError:
        return True


def end_failed(cfg: SupervisorConfig) -> ExitCode:
    """The chain ends FAILED. An expedited job that exits non-zero would be requeued held
    by Slurm (REQUEUE_HOLD, waiting forever): turn its requeue off first."""
    if cfg.expedite:
        from slurm_supernode.slurm import jobs

        with contextlib.suppress(SlurmError):
            jobs.update_job(cfg.job_id, Requeue=0)
    return ExitCode.FAILED
