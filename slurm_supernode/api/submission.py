"""``submit(plan)``: the first side effect. Writes the job directory, runs sbatch through the
Slurm layer (a busy controller is retried), and returns a ``Job`` handle on the chain."""

from __future__ import annotations

from typing import TYPE_CHECKING

from slurm_supernode.api.planning import JobPlan
from slurm_supernode.api.submit_plan import submit_plan
from slurm_supernode.api.wording import in_api_words

if TYPE_CHECKING:
    from slurm_supernode.api.job import Job
    from slurm_supernode.api.watcher import Watcher
    from slurm_supernode.launch.after import After


@in_api_words
def submit(
    job_plan: JobPlan, *, watcher: Watcher | None = None, after: After | str | None = None
) -> Job:
    """Submit a plan from ``plan`` (api/submit_plan.py says what is refused and when).
    ``watcher``: the one that serves this process's jobs (default: a shared one).
    ``after``: start only once that job's whole chain has ended so (``"1234:ok"``)."""
    from slurm_supernode.api.arguments import check_after, check_watcher
    from slurm_supernode.api.job import Job

    check_plan(job_plan)
    check_watcher(watcher)
    after = check_after(after)  # type: ignore[assignment]
    job_dir, job_id = submit_plan(job_plan, after=after)
    return Job(job_dir, job_id, watcher=watcher)


def check_plan(job_plan: object, where: str = "plan") -> None:
    """``submit`` takes what ``plan`` returns; a spec given instead is the common slip."""
    from slurm_supernode.api.arguments import shown
    from slurm_supernode.errors import InputError
    from slurm_supernode.launch.jobspec import JobSpec

    if isinstance(job_plan, JobPlan):
        return
    hint = "api.submit(api.plan(spec))" if isinstance(job_plan, JobSpec) else None
    raise InputError(
        f"{where} must be the api.JobPlan that api.plan(spec) returns, not {shown(job_plan)}",
        where=where,
        hint=hint or "plan = api.plan(spec); api.submit(plan)",
    )
