"""The JobSpec of a job that runs snrun's own measurement in a batch job on ``bench.sh.j2``:
the bench (``bench/submit.py``) and the doctor (``doctor/job.py``) are the same kind of job
(snrun's module with its arguments, no restarts, the job's container options, pinned to the
chosen super nodes where the user named them) and build it here, once."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from slurm_supernode.launch.container_options import ContainerOptions
from slurm_supernode.launch.jobspec import JobSpec

TEMPLATE = "bench.sh.j2"


class MeasurementJob(Protocol):
    """What a bench or doctor job says about the batch job it runs in."""

    @property
    def partition(self) -> str | None: ...
    @property
    def time(self) -> str | None: ...
    @property
    def nproc_per_node(self) -> int | None: ...
    @property
    def profiles(self) -> tuple[str, ...]: ...
    @property
    def site_arg(self) -> str | None: ...
    @property
    def workdir(self) -> str | None: ...


def measurement_spec(
    job: MeasurementJob,
    argv: Iterable[str],
    *,
    job_name: str,
    container: ContainerOptions,
    sbatch_args: Iterable[str],
    env: Iterable[tuple[str, str]] = (),
    pinned_nodes: str | None = None,
    **size: Any,
) -> JobSpec:
    """``python -m slurm_supernode ARGV`` as a job; ``size``: ``supernodes=N``, or ``nodes=N``
    with ``allow_partial``."""
    return JobSpec(
        program="slurm_supernode",
        program_args=tuple(argv),
        module=True,
        job_name=job_name,
        partition=job.partition,
        time=job.time,
        nproc_per_node=job.nproc_per_node,
        env=tuple(env),
        profiles=job.profiles,
        site=job.site_arg,
        template=TEMPLATE,
        max_restarts=0,
        workdir=job.workdir,
        sbatch_args=tuple(sbatch_args),
        pinned_nodes=pinned_nodes,
        container=container,
        **size,
    )
