"""Where the doctor's in-allocation part runs: a job on whole super nodes (or named nodes),
or an overlapping step inside a running job (``--job``).

The job is an ordinary snrun job with the bench's template (``bench.sh.j2``: no supervisor,
no restarts, the snrun agent on every node sets the device order and ``SNRUN_SUPERNODE``,
torchrun runs ``snrun doctor --in-job``). Planning is pure, like ``bench.submit.plan_bench``.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from slurm_supernode.bench.measurement_spec import measurement_spec
from slurm_supernode.bench.submit import BenchJob, choose_supernodes
from slurm_supernode.errors import InputError
from slurm_supernode.fsutil import expand_path
from slurm_supernode.hostlist import fold
from slurm_supernode.launch.container_options import ContainerOptions
from slurm_supernode.launch.job import JobPlan, plan_job
from slurm_supernode.launch.request import ClusterFacts
from slurm_supernode.site.model import Site

JOB_NAME = "snrun-doctor"
FACTS_FILE = "doctor-facts.json"


@dataclass(frozen=True)
class DoctorJob:
    """What ``snrun doctor`` was asked (checked by ``plan_doctor``)."""

    supernodes: str | None = None  # names; None: -S count, hosts or all
    count: int | None = None  # -S N
    hosts: tuple[str, ...] = ()  # --nodes LIST / the nodes of --job
    nproc_per_node: int | None = None
    backend: str = "auto"
    size: int | None = None
    iters: int | None = None
    db: str | None = None
    checkpoint_dir: str | None = None
    time: str | None = "00:30:00"
    partition: str | None = None
    profiles: tuple[str, ...] = ()
    site_arg: str | None = None
    workdir: str | None = None
    # --container-*: the checks in an image
    container: ContainerOptions = field(default_factory=ContainerOptions)

    def __post_init__(self) -> None:
        # the API takes the options, a mapping of their fields, or None (launch.container_options)
        object.__setattr__(self, "container", ContainerOptions.of(self.container))


def results_db(site: Site, job: DoctorJob) -> str:
    return str(expand_path(job.db or site.paths.results_db).absolute())


def inside_argv(site: Site, job: DoctorJob) -> list[str]:
    """``doctor --in-job ...`` as torchrun runs it (site and job dir come from the job's
    SNRUN_SITE_FILE / SNRUN_JOB_DIR)."""
    argv = ["doctor", "--in-job", "--backend", job.backend, "--db", results_db(site, job)]
    if job.size:
        argv += ["--size", str(job.size)]
    if job.iters:
        argv += ["--iters", str(job.iters)]
    ckpt = job.checkpoint_dir or site.doctor.checkpoint_dir
    if ckpt:
        argv += ["--checkpoint-dir", str(expand_path(ckpt).absolute())]
    return argv


def plan_doctor(
    site: Site,
    job: DoctorJob,
    facts: ClusterFacts | None = None,
    *,
    jobs_root: Path | None = None,
    stamp: float | None = None,
    token: str | None = None,
) -> JobPlan:
    """The doctor job's plan (request, job directory, script). Pure."""
    sbatch_args = ["--no-requeue"]
    sub_site = site
    size: dict[str, Any]  # the JobSpec fields of the job's size
    if job.hosts:
        unknown = [h for h in job.hosts if not site.has_node(h)]
        if unknown:
            raise InputError(
                f"site {site.name} has no node {fold(unknown)}",
                where="--nodes",
                hint="nodes: " + fold(n.hostname for n in site.nodes),
            )
        sbatch_args.append(f"--nodelist={fold(job.hosts)}")
        size = {"nodes": len(job.hosts), "allow_partial": True}
    else:
        chosen = choose_supernodes(site, BenchJob(supernodes=job.supernodes, count=job.count))
        sub_site = dataclasses.replace(site, supernodes=chosen)
        size = {"supernodes": job.count if job.count is not None else len(chosen)}
    # one allocation (block/switches) is pinned to the named super nodes, spares left out
    pinned = fold(h for sn in sub_site.supernodes for h in sn.hostnames) if job.supernodes else None
    spec = measurement_spec(
        job,
        inside_argv(site, job),
        job_name=JOB_NAME,
        container=job.container,
        sbatch_args=sbatch_args,
        pinned_nodes=pinned,
        **size,
    )
    return plan_job(spec, sub_site, facts, jobs_root=jobs_root, stamp=stamp, token=token)


def step_env(plan: JobPlan, hosts: tuple[str, ...]) -> dict[str, str]:
    """Environment of the overlapping step (what bench.sh.j2 exports in a batch job), with
    a master port of its own so it never meets the running job's torchrun."""
    env = {**plan.env}
    env.update(
        {
            "SNRUN_JOB_DIR": str(plan.job_dir),
            "SNRUN_SITE_FILE": str(plan.job_dir / "site.yaml"),
            "SNRUN_NODELIST": fold(hosts),
            "SNRUN_MASTER_PORT": str(random.randint(36000, 44000)),
        }
    )
    return env


def run_in_job(plan: JobPlan, job_id: int, hosts: tuple[str, ...], timeout: float) -> int:
    """Write the job directory and run the agents as a step of job ``job_id`` that overlaps
    its running steps; returns the step's exit code (output goes to the job dir's logs)."""
    from slurm_supernode.fsutil import write_atomic
    from slurm_supernode.launch.agent_argv import agent_argv
    from slurm_supernode.launch.job import program_argv, write_job_dir
    from slurm_supernode.slurm.steps import overlap_step

    write_job_dir(plan)
    argv = agent_argv(plan.inputs.python, plan.job_dir, program_argv(plan.spec))
    proc = overlap_step(
        job_id,
        fold(hosts),
        len(hosts),
        argv,
        env=step_env(plan, hosts),
        timeout=timeout,
        cwd=plan.inputs.workdir,
    )
    write_atomic(plan.job_dir / "logs" / f"step-{job_id}.out", proc.stdout + proc.stderr)
    return proc.returncode
