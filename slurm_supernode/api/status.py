"""What ``snrun status`` shows: one chain's attempts with their evidence, or the user's recent
chains (chain/status.py folds the ledger and formats both)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def find_job_dir(job: int | str | Path, *, jobs_dir: str | Path | None, site: str | None) -> Path:
    """The job directory a job id (any attempt's) or a path names; ``jobs_dir`` and ``site``
    say where job directories are (default: ``$SNRUN_JOBS_DIR``, the site's)."""
    from slurm_supernode.launch import jobdir

    root = jobdir.jobs_root(str(jobs_dir) if jobs_dir is not None else None, site)
    return jobdir.find_job_dir(root, str(job))


def chain_status(
    job: int | str | Path, *, jobs_dir: str | Path | None = None, site: str | None = None
) -> dict[str, Any]:
    """The chain's job ids, state, reason and attempts (with the evidence of each)."""
    from slurm_supernode.chain.status import chain_summary

    return chain_summary(find_job_dir(job, jobs_dir=jobs_dir, site=site))


def recent_chains(
    last: int, *, jobs_dir: str | Path | None = None, site: str | None = None
) -> tuple[Path, list[dict[str, Any]]]:
    """(where job directories are, one row per chain of the user's ``last`` most recent)."""
    from slurm_supernode.chain import status
    from slurm_supernode.launch.jobdir import jobs_root, own_job_dirs

    root = jobs_root(str(jobs_dir) if jobs_dir is not None else None, site)
    return root, status.recent_chains(own_job_dirs(root)[:last])


def recent(
    last: int, *, jobs_dir: str | Path | None = None, site: str | None = None
) -> tuple[Path, list[dict[str, Any]]]:
    """``snrun status`` without a job: the user's ``last`` most recently active chains and
    sweeps together, newest first, a row each (exactly ``last`` where there are as many),
    with one Slurm query for all of them (a job the controller no longer lists is still
    looked up alone, in accounting)."""
    from slurm_supernode.chain import array_status, status
    from slurm_supernode.launch.jobdir import jobs_root, own_dirs
    from slurm_supernode.slurm.job_lookup import records_of_many

    root = jobs_root(str(jobs_dir) if jobs_dir is not None else None, site)
    record = records_of_many()
    rows = []
    for d in own_dirs(root, ("plan.json", "sweep.json"))[:last]:
        if array_status.is_sweep(d):
            rows += array_status.recent_sweeps([d], record)
        else:
            rows += status.recent_chains([d], record)
    return root, rows
