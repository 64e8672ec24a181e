"""``submit(plan)``: the first side effect. Writes the job directory, runs sbatch through the
Slurm layer (a busy controller is retried), and returns a ``Job`` handle on the chain."""

from __future__ import annotations

from typing import TYPE_CHECKING

from slurm_supernode.api.planning import JobPlan
from slurm_supernode.api.submit_plan import submit_plan

if TYPE_CHECKING:
    from slurm_supernode.api.job import Job
    from slurm_supernode.api.watcher import Watcher
    from slurm_supernode.launch.after import After


def submit(
    job_plan: JobPlan, *, watcher: Watcher | None = None, after: After | str | None = None
) -> Job:
    """Submit a plan from ``plan`` (api/submit_plan.py says what is refused and when).
    ``watcher``: the one that serves this process's jobs (default: a shared one).
    ``after``: start only once that job's whole chain has ended so (``"1234:ok"``)."""
    from slurm_supernode.api.job import Job

    job_dir, job_id = submit_plan(job_plan, after=after)
    return Job(job_dir, job_id, watcher=watcher)
