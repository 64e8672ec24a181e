"""Bench jobs from Python: plan, submit and wait for a bench over whole super nodes, and the
in-job measurement that stores its run (``snrun bench submit`` / ``bench run`` parse their
arguments and call these)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from slurm_supernode.api.checked import checked
from slurm_supernode.api.site_ref import site_argument
from slurm_supernode.bench.submit import BenchJob

if TYPE_CHECKING:
    from slurm_supernode.bench.model import BenchConfig, BenchRun
    from slurm_supernode.launch.job import JobPlan

WEEK_S = 7 * 86400.0


@dataclass(frozen=True)
class BenchSubmission:
    """A planned bench job, and its id once submitted (None: planned only, a dry run)."""

    plan: JobPlan
    job_id: int | None
    notices: tuple[str, ...] = ()  # what the planner adjusted (printed as "snrun: ...")


@dataclass(frozen=True)
class BenchOutcome:
    """How a submitted bench job ended."""

    job_id: int
    state: str  # as Slurm says it, e.g. "COMPLETED", "FAILED", "CANCELLED"
    exit_code: int | None
    ok: bool  # completed with exit code 0
    log: Path
    cause: str | None = None  # the forensics' last failure, when it did not complete


@checked
def plan_bench_job(job: BenchJob, *, require_slurm: bool = False) -> JobPlan:
    """The bench job's plan (script, request, job directory); no side effect."""
    from slurm_supernode.bench.submit import bench_container, plan_bench
    from slurm_supernode.launch.facts import gather_facts
    from slurm_supernode.launch.jobdir import jobs_root
    from slurm_supernode.site.loader import load_site

    job = dataclasses.replace(job, site_arg=site_argument(job.site_arg))
    site = load_site(job.site_arg)
    wants_container = bench_container(site, job).image is not None  # runtimes asked only then
    facts = gather_facts(site, required=require_slurm, containers=wants_container)
    root = jobs_root(job.jobs_dir, site_jobs_dir=site.paths.jobs_dir)
    return plan_bench(site, job, facts, jobs_root=root)


@checked
def submit_bench(job: BenchJob, *, dry_run: bool = False) -> BenchSubmission:
    """Plan the bench job and (unless ``dry_run``) submit it."""
    plan = plan_bench_job(job, require_slurm=not dry_run)
    notices = tuple(plan.request.notices)
    if dry_run:
        return BenchSubmission(plan, None, notices)
    from slurm_supernode.launch.job import submit_job

    return BenchSubmission(plan, submit_job(plan), notices)


def wait_bench(submission: BenchSubmission, *, timeout: float = WEEK_S) -> BenchOutcome:
    """Wait until the submitted bench job has ended; say how (and why, if it failed)."""
    from slurm_supernode.errors import InputError
    from slurm_supernode.slurm import jobs

    if submission.job_id is None:
        raise InputError("a dry run submitted no job to wait for", where="--wait")
    job_id, job_dir = submission.job_id, submission.plan.job_dir
    info = jobs.wait_for(job_id, (), timeout=timeout, poll=2)
    ok = info.state.base == "COMPLETED" and info.exit_code == 0
    log = job_dir / "logs" / f"slurm-{job_id}.out"
    if ok:
        return BenchOutcome(job_id, str(info.state), info.exit_code, True, log)
    from slurm_supernode.chain.ledger import rank_failures
    from slurm_supernode.forensics.report import last_failure

    cause = last_failure(job_dir, rank_failures(job_dir))
    return BenchOutcome(job_id, str(info.state), info.exit_code, False, log, cause)


def measure(
    config: BenchConfig, *, json_out: str | None = None, db: str | None = None
) -> BenchRun | None:
    """Run the benchmark (under torchrun / in a job); rank 0 gets the run, written to
    ``json_out`` and appended to the results database ``db``; other ranks get None."""
    from slurm_supernode.bench.collectives import run_benchmark
    from slurm_supernode.fsutil import write_atomic

    result = run_benchmark(config)
    if result is None:
        return None
    if json_out:
        write_atomic(json_out, json.dumps(result.to_dict(), indent=1) + "\n")
    if db:
        from slurm_supernode.bench.store import open_store

        with open_store(db) as store:
            store.add_run(result)
    return result


def wrong_elements(run: BenchRun) -> int:
    """How many result elements failed verification in a run."""
    return sum(r.wrong for r in run.results)
