"""Chains of jobs from Python: ``then(job, spec)`` submits ``spec`` to start once ``job``'s
chain has ended ``ok`` (or ``any``/``notok``), requeues and resubmissions included
(chain/dependents.py says how; docs/api.md, section Sweeps and chains)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from slurm_supernode.api.wording import in_api_words
from slurm_supernode.chain.dependents import Prepared
from slurm_supernode.chain.dependents import prepare_after as _prepare
from slurm_supernode.launch.after import After
from slurm_supernode.launch.jobspec import JobSpec

if TYPE_CHECKING:
    from slurm_supernode.api.job import Job


class HasJobDir(Protocol):
    """A job handle (``api.Job``): anything with its chain's directory."""

    @property
    def job_dir(self) -> Path: ...


def prepare_after(after: After | str, jobs_root: Path, user_dependency: str | None) -> Prepared:
    """What ``--after`` would submit with (the dry run's notice), nothing submitted."""
    return _prepare(after, jobs_root, user_dependency)


@in_api_words
def then(job: int | str | Path | HasJobDir, spec: JobSpec, when: str = "ok") -> Job:
    """Submit ``spec`` to start when ``job``'s chain (a job handle, a job id of any attempt,
    ``ARRAY_TASK``, a sweep's array id, or a job directory) has ended ``when``.
    ``spec.jobs_dir`` says where job directories are (the predecessor is looked up there too).
    On a handle, ``job.then(spec, when)`` does the same."""
    from slurm_supernode.api.arguments import check_job_ref, check_spec, check_when
    from slurm_supernode.api.job import Job
    from slurm_supernode.api.submit_plan import submit_dependent

    target = check_job_ref(job)
    spec, when = check_spec(spec), check_when(when)
    job_dir, job_id = submit_dependent(target, spec, when)
    return Job(job_dir, job_id)


__all__ = ["HasJobDir", "prepare_after", "then"]
