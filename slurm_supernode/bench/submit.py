"""A bench job on whole super nodes: ``snrun bench submit`` (and every scheduled run).

The job is an ordinary snrun job planned by ``launch.job.plan_job`` (same request for whole
super nodes, same job directory, the same per-node agent that sets the device order and
``SNRUN_SUPERNODE``) with the template ``bench.sh.j2``: no supervisor and no restarts, one
srun step whose agents run ``torchrun -m slurm_supernode bench run``; rank 0 appends the run
to the site's results database. Planning is pure and never imports torch.

Named super nodes are planned on a copy of the site holding only them, so every strategy's
request can only land there (``--nodelist`` instead of ``--segment``/``--switches`` pins the
single-allocation strategies: Slurm 24.11 refuses ``--segment`` with a nodelist across blocks).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from slurm_supernode.bench.measure_options import (
    format_size,
    parse_collectives,
    parse_dtypes,
    parse_scopes,
    parse_sizes,
)
from slurm_supernode.bench.measurement_spec import measurement_spec
from slurm_supernode.errors import InputError
from slurm_supernode.fsutil import expand_path
from slurm_supernode.hostlist import HostlistError, expand, fold
from slurm_supernode.launch.container_options import ContainerOptions
from slurm_supernode.launch.job import JobPlan, plan_job
from slurm_supernode.launch.request import ClusterFacts
from slurm_supernode.site.model import Site, SuperNode

JOB_NAME = "snrun-bench"
SCHEDULE_ENV = "SNRUN_BENCH_SCHEDULE"  # set in chained jobs: the schedule to resubmit
SITE_ENV = "SNRUN_BENCH_SITE"  # the --site argument the successor is planned with


@dataclass(frozen=True)
class BenchJob:
    """What ``snrun bench submit`` was asked (strings as typed; checked by ``plan_bench``)."""

    supernodes: str | None = None  # names: "sn0,sn1" or "sn[0-1]"; None: count or all
    count: int | None = None  # -S N: any N whole super nodes
    nproc_per_node: int | None = None
    sizes: str | None = None  # default: the site's bench.sizes, else 1K-1G
    collectives: str = "all"
    scopes: str = "all"
    dtype: str = "float32"
    iters: int = 20
    warmup: int = 5
    backend: str = "auto"
    db: str | None = None  # default: the site's paths.results_db
    time: str | None = None
    partition: str | None = None
    profiles: tuple[str, ...] = ()
    job_name: str = JOB_NAME
    begin: str | None = None  # sbatch --begin value
    schedule: str | None = None  # chain schedule name (the job submits its successor)
    site_arg: str | None = None  # how a successor finds the site (name or path)
    workdir: str | None = None
    jobs_dir: str | None = None  # where the job directory goes (default: the site's)
    # --container-*: the bench in an image (default: the site's bench.container_image)
    container: ContainerOptions = field(default_factory=ContainerOptions)

    def __post_init__(self) -> None:
        # the API takes the options, a mapping of their fields, or None (launch.container_options)
        object.__setattr__(self, "container", ContainerOptions.of(self.container))


def choose_supernodes(site: Site, job: BenchJob) -> tuple[SuperNode, ...]:
    """The named super nodes in site order, or all of them when neither names nor -S."""
    if job.supernodes and job.count is not None:
        raise InputError("give --supernodes NAMES or -S N, not both", where="--supernodes")
    if not job.supernodes:
        return site.supernodes
    try:
        names = expand(job.supernodes)
    except HostlistError as exc:
        raise InputError(f"bad super node list: {exc}", where="--supernodes") from None
    known = {sn.name for sn in site.supernodes}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(
            f"site {site.name} has no super node {', '.join(unknown)}",
            where="--supernodes",
            hint="super nodes: " + fold(known),
        )
    return tuple(sn for sn in site.supernodes if sn.name in set(names))


def bench_run_argv(site: Site, job: BenchJob, db: str) -> list[str]:
    """``-m slurm_supernode bench run ...`` as torchrun runs it (options checked here, so a
    typo fails at submit time rather than in the job)."""
    sizes = job.sizes or (",".join(str(s) for s in site.bench.sizes) or "1K-1G")
    parsed = parse_sizes(sizes)
    parse_collectives(job.collectives)
    parse_scopes(job.scopes)
    parse_dtypes(job.dtype)
    if job.iters < 1 or job.warmup < 0:
        raise InputError("--iters must be >= 1 and --warmup >= 0", where="--iters")
    return [
        "-m", "slurm_supernode", "bench", "run",
        "--site", site.name,
        "--db", db,
        "--sizes", ",".join(format_size(s) for s in parsed),
        "--collectives", job.collectives,
        "--scopes", job.scopes,
        "--dtype", job.dtype,
        "--iters", str(job.iters),
        "--warmup", str(job.warmup),
        "--backend", job.backend,
    ]  # fmt: skip


def bench_container(site: Site, job: BenchJob) -> ContainerOptions:
    """The bench's container options: the job's, with the site's ``bench.container_image``
    where the job names no image (the nightly bench measures the stack users train with)."""
    return job.container.or_image(site.bench.container_image)


def results_db(site: Site, job: BenchJob) -> str:
    """``--db``, else the site's results database, as an absolute path (jobs see the same)."""
    return str(expand_path(job.db or site.paths.results_db).absolute())


def plan_bench(
    site: Site,
    job: BenchJob,
    facts: ClusterFacts | None = None,
    *,
    jobs_root: Path | None = None,
    stamp: float | None = None,
    token: str | None = None,
) -> JobPlan:
    """The bench job's plan: request, job directory and ``bench.sh.j2`` script. Pure."""
    chosen = choose_supernodes(site, job)
    sub_site = dataclasses.replace(site, supernodes=chosen)
    sbatch_args = ["--no-requeue"]
    if job.begin:
        sbatch_args.append(f"--begin={job.begin}")
    env: list[tuple[str, str]] = []
    if job.schedule:
        env += [(SCHEDULE_ENV, job.schedule), (SITE_ENV, job.site_arg or site.source or site.name)]
    spec = measurement_spec(
        job,
        bench_run_argv(site, job, results_db(site, job))[2:],
        job_name=job.job_name,
        container=bench_container(site, job),
        sbatch_args=sbatch_args,
        env=env,
        # One allocation (block/switches strategy) is pinned to the named super nodes.
        pinned_nodes=fold([h for sn in chosen for h in sn.hostnames]) if job.supernodes else None,
        supernodes=job.count if job.count is not None else len(chosen),
    )
    return plan_job(spec, sub_site, facts, jobs_root=jobs_root, stamp=stamp, token=token)
