"""``submit_plan(plan)``: the first side effect, without the handle. Writes the job directory
and runs sbatch through the Slurm layer; ``submit`` and ``Job.then`` wrap its answer in a
``Job`` (kept apart so that ``Job`` can submit a dependent without an import cycle)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from slurm_supernode.api.planning import JobPlan, plan

if TYPE_CHECKING:
    from slurm_supernode.launch.after import After
    from slurm_supernode.launch.jobspec import JobSpec


class Submitted(NamedTuple):
    """Where a submitted chain lives and the job id sbatch gave it."""

    job_dir: Path
    job_id: int


def submit_plan(job_plan: JobPlan, *, after: After | str | None = None) -> Submitted:
    """Submit a plan from ``plan``. A plan with a refusal (the script is missing) raises it; a
    plan made without Slurm's facts is made again with them (an unreachable Slurm raises).
    ``after``: start only once that job's whole chain has ended so (``"1234:ok"``,
    chain/dependents.py): submitted held, registered with the predecessor, released."""
    from slurm_supernode.chain.dependents import after_args, finish_after, prepare_after
    from slurm_supernode.errors import SlurmError
    from slurm_supernode.launch.directives import blame_line
    from slurm_supernode.launch.job import submit_job

    if job_plan.refusal is not None:
        raise job_plan.refusal
    if job_plan.facts is None:
        job_plan = plan(job_plan.asked, need_slurm=True)
    prepared = None
    if after is not None:  # before anything is written: an unsatisfiable one is refused
        prepared = prepare_after(after, job_plan.job_dir.parent, job_plan.spec.dependency)
    try:
        job_id = submit_job(job_plan.launch, extra_args=after_args(prepared))
    except SlurmError as exc:  # an #SBATCH line of the script that sbatch refused: name it
        line = blame_line(exc.message, list(job_plan.directives), job_plan.spec.program)
        if line and not exc.where:
            exc.where = f"#SBATCH line {line}"
        raise
    if prepared is not None:
        finish_after(prepared, job_plan.spec.sbatch_args, job_id, job_plan.job_dir)
    return Submitted(job_plan.job_dir, job_id)


def submit_dependent(target: str, spec: JobSpec, when: str) -> Submitted:
    """Submit ``spec`` to start once the chain ``target`` names (a job id of any attempt,
    ``ARRAY_TASK``, a sweep's array id, or a job directory) has ended ``when``; an
    unsatisfiable dependency is refused before anything is planned."""
    from slurm_supernode.chain.dependents import prepare_after
    from slurm_supernode.launch.after import After
    from slurm_supernode.launch.jobdir import jobs_root

    wanted = After(target, when)
    prepare_after(wanted, jobs_root(spec.jobs_dir, spec.site), spec.dependency)
    return submit_plan(plan(spec, need_slurm=True), after=wanted)
