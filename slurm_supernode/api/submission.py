"""``submit(plan)``: the first side effect. Writes the job directory, runs sbatch through the
Slurm layer (a busy controller is retried), and returns a ``Job`` handle on the chain."""

from __future__ import annotations

from typing import TYPE_CHECKING

from slurm_supernode.api.planning import JobPlan, plan

if TYPE_CHECKING:
    from slurm_supernode.api.job import Job
    from slurm_supernode.api.watcher import Watcher
    from slurm_supernode.launch.after import After


def submit(
    job_plan: JobPlan, *, watcher: Watcher | None = None, after: After | str | None = None
) -> Job:
    """Submit a plan from ``plan``. A plan with a refusal (the script is missing) raises it; a
    plan made without Slurm's facts is made again with them (an unreachable Slurm raises).
    ``watcher``: the one that serves this process's jobs (default: a shared one).
    ``after``: start only once that job's whole chain has ended so (``"1234:ok"``,
    runtime/after.py): submitted held, registered with the predecessor, released."""
    from slurm_supernode.api.job import Job
    from slurm_supernode.errors import SlurmError
    from slurm_supernode.launch.directives import blame_line
    from slurm_supernode.launch.job import submit_job

    if job_plan.refusal is not None:
        raise job_plan.refusal
    if job_plan.facts is None:
        job_plan = plan(job_plan.asked, need_slurm=True)
    from slurm_supernode.runtime.after import after_args, finish_after, prepare_after

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
    return Job(job_plan.job_dir, job_id, watcher=watcher)
