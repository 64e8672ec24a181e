"""Chains of jobs from Python: ``then(job, spec)`` submits ``spec`` to start once ``job``'s
chain has ended ``ok`` (or ``any``/``notok``), requeues and resubmissions included
(runtime/after.py says how; docs/api.md, section Sweeps and chains)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from slurm_supernode.launch.after import After
from slurm_supernode.launch.jobspec import JobSpec
from slurm_supernode.runtime.after import Prepared
from slurm_supernode.runtime.after import prepare_after as _prepare

if TYPE_CHECKING:
    from slurm_supernode.api.job import Job


class HasJobDir(Protocol):
    """A job handle (``api.Job``): anything with its chain's directory."""

    @property
    def job_dir(self) -> Path: ...


def prepare_after(after: After | str, jobs_root: Path, user_dependency: str | None) -> Prepared:
    """What ``--after`` would submit with (the dry run's notice), nothing submitted."""
    return _prepare(after, jobs_root, user_dependency)


def then(job: int | str | Path | HasJobDir, spec: JobSpec, when: str = "ok") -> Job:
    """Submit ``spec`` to start when ``job``'s chain (a job handle, a job id of any attempt,
    ``ARRAY_TASK``, a sweep's array id, or a job directory) has ended ``when``.
    ``spec.jobs_dir`` says where job directories are (the predecessor is looked up there too).
    A function, not a ``Job`` method: ``Job`` would import the submission path that returns
    ``Job`` handles (an import cycle the layer contract refuses)."""
    from slurm_supernode.api.planning import plan
    from slurm_supernode.api.submission import submit
    from slurm_supernode.launch.jobdir import jobs_root

    target = str(job.job_dir) if hasattr(job, "job_dir") else str(job)
    wanted = After(target, when)
    _prepare(wanted, jobs_root(spec.jobs_dir, spec.site), spec.dependency)  # refused early
    return submit(plan(spec, need_slurm=True), after=wanted)


__all__ = ["HasJobDir", "prepare_after", "then"]
