"""plan -> render -> submit for one snrun job.

``plan_job`` is pure (no Slurm call, no file written): it returns the materialised request,
the script text and everything the job directory will hold, so ``--dry-run`` and tests can
inspect it. ``submit_job`` writes the job directory and calls sbatch through the Slurm layer.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slurm_supernode import __version__
from slurm_supernode.errors import InputError, SlurmError
from slurm_supernode.fsutil import expand_path, write_atomic, write_json_atomic
from slurm_supernode.launch.agent_argv import agent_argv
from slurm_supernode.launch.envmerge import merge_env
from slurm_supernode.launch.inputs import FILE as INPUTS_FILE
from slurm_supernode.launch.inputs import JobInputs
from slurm_supernode.launch.jobdir import job_dir_name, link_job_id
from slurm_supernode.launch.jobspec import JobSpec
from slurm_supernode.launch.observe_options import check_observe_env, observe_env
from slurm_supernode.launch.render import render_sbatch
from slurm_supernode.launch.request import ClusterFacts, SbatchRequest, plan_request
from slurm_supernode.launch.snapshot import (
    SnapshotPlan,
    collect_snapshot,
    limit_bytes,
    plan_snapshot,
    write_snapshot,
)
from slurm_supernode.launch.syntax import check_job_values
from slurm_supernode.site.model import Site
from slurm_supernode.user_settings import parse_seconds

SNRUN_MODULE = "slurm_supernode"  # ``-m slurm_supernode``: snrun's own in-job part

if TYPE_CHECKING:
    from slurm_supernode.launch.container import ContainerSpec
    from slurm_supernode.placement.model import RankMap


# one decision, compared by identity; no repr: it would print the whole site and script
@dataclass(frozen=True, eq=False, repr=False)
class JobPlan:
    """Everything decided before submission."""

    spec: JobSpec
    site: Site
    request: SbatchRequest
    job_dir: Path
    script: str
    env: dict[str, str]  # site profiles < --env (the template may add its own in between)
    inputs: JobInputs
    snapshot: SnapshotPlan | None = None  # the code copy every attempt runs
    # the rank map on ``example_hosts`` (made to refuse a layout early; the preview shows it)
    example_rank_map: RankMap | None = None

    @property
    def agent_inputs(self) -> dict[str, Any]:
        """The job inputs as written to plan.json (plain dict form)."""
        return self.inputs.to_dict()

    @property
    def example_hosts(self) -> list[str]:
        """Nodes of the first candidate super nodes: the allocation used to preview the plan."""
        k = self.request.supernodes or 1
        hosts: list[str] = []
        for name in self.request.candidates[:k]:
            hosts += list(self.site.supernode(name).hostnames)
        if self.request.supernodes is None:
            hosts = hosts[: self.request.nodes]
        return hosts


def program_argv(
    spec: JobSpec, snapshot: SnapshotPlan | None = None, workdir: str = ""
) -> list[str]:
    """What torchrun runs: ``SCRIPT ARGS`` or ``-m MODULE ARGS`` (the script in the snapshot
    when there is one)."""
    program = snapshot.program(spec.program, workdir) if snapshot else spec.program
    head = ["-m", program] if spec.module else [program]
    return head + list(spec.program_args)


def plan_job(
    spec: JobSpec,
    site: Site,
    facts: ClusterFacts | None = None,
    *,
    jobs_root: Path | None = None,
    stamp: float | None = None,
    token: str | None = None,
    job_dir: Path | None = None,
) -> JobPlan:
    """Decide the request, the job directory and the script text. Pure. ``job_dir``: an
    exact directory (a sweep's task), instead of a new one under ``jobs_root``."""
    fork_workers = _checked_worker_mode(spec, site)
    if job_dir is None:
        root = jobs_root or expand_path(site.paths.jobs_dir)
        job_dir = (root / job_dir_name(spec.name, stamp, token)).absolute()
    logs = job_dir / "logs"
    request = plan_request(spec, site, facts, output=str(logs / "slurm-%j.out"))
    _check_nproc(spec.nproc_per_node, site)
    site_env, user_env = merge_env(site, spec.env, spec.profiles)
    user_env |= observe_env(
        spec.on_slow_node, spec.tokens_per_step, spec.samples_per_step, spec.plan_model
    )
    check_observe_env({**site_env, **user_env})
    workdir = spec.workdir or os.getcwd()
    python = spec.launcher_python or sys.executable
    merged_env = {**site_env, **user_env}
    snapshot = plan_snapshot(spec.program, spec.module, workdir, job_dir, spec.snapshot)
    container = _container(spec, site, job_dir, workdir, snapshot, facts)
    inputs = _job_inputs(
        spec,
        site,
        request,
        job_dir,
        fork_workers=fork_workers,
        env=merged_env,
        snapshot=snapshot,
        workdir=workdir,
        python=python,
        container=container,
    )
    context = template_context(inputs, job_dir, site_env, user_env)
    script = render_sbatch(context, spec.template, spec.blocks)
    plan = JobPlan(
        spec=spec,
        site=site,
        request=request,
        job_dir=job_dir,
        script=script,
        env=merged_env,
        inputs=inputs,
        snapshot=snapshot,
    )
    # A layout the framework (or the node size) refuses is refused here, with its reason,
    # not by every agent after the job waited in the queue.
    from slurm_supernode.launch.inputs import rank_map_for_job

    rank_map = rank_map_for_job(inputs, site, plan.example_hosts)
    return dataclasses.replace(plan, example_rank_map=rank_map)


def _container(
    spec: JobSpec,
    site: Site,
    job_dir: Path,
    workdir: str,
    snapshot: SnapshotPlan | None,
    facts: ClusterFacts | None,
) -> ContainerSpec | None:
    """The training step's container, checked against the site and the runtimes the running
    Slurm offers; None without an image (the container modules are then not even loaded)."""
    if spec.container is None or spec.container.wanted_image() is None:
        return None
    from slurm_supernode.launch.container import own_package, resolve_container

    extra = (str(snapshot.dest),) if snapshot else ()
    available = facts.container_runtimes if facts else None
    # snrun's own in-job part (bench, doctor) runs in the image: its package goes in too
    own = spec.module and spec.program == SNRUN_MODULE
    return resolve_container(
        spec.container,
        site,
        job_dir=job_dir,
        workdir=workdir,
        extra_paths=extra,
        available=available,
        snrun_package=own_package() if own else None,
        slurm_version=facts.version if facts else None,
    )


def _checked_worker_mode(spec: JobSpec, site: Site) -> bool:
    """The spec's values that can never work fail here; forked workers or not (the site's
    default unless asked), refused for a module, which torchrun cannot fork by path."""
    if not spec.module and not spec.program:
        raise InputError("no training script given", where="SCRIPT", hint="snrun train.py ...")
    check_job_values(spec)
    fork_workers = fork_default(spec, site) if spec.fork_workers is None else spec.fork_workers
    if fork_workers and spec.module:
        raise InputError(
            "forked workers are off for -m modules: torchrun forks a script file by its path",
            where="--fork-workers",
            hint="give the script's path instead of -m, or drop --fork-workers",
        )
    return fork_workers


def _check_nproc(nproc: int | None, site: Site) -> None:
    """--nproc-per-node within 1..the most devices a node of the site has."""
    per_node = {n.devices for sn in site.supernodes for n in sn.nodes}
    if nproc is not None and (nproc < 1 or nproc > max(per_node)):
        raise InputError(
            f"--nproc-per-node {nproc} is out of range",
            where="--nproc-per-node",
            hint=f"nodes of site {site.name} have {max(per_node)} devices",
        )


def _job_inputs(
    spec: JobSpec,
    site: Site,
    request: SbatchRequest,
    job_dir: Path,
    *,
    fork_workers: bool,
    env: dict[str, str],
    snapshot: SnapshotPlan | None,
    workdir: str,
    python: str,
    container: ContainerSpec | None = None,
) -> JobInputs:
    """What the job reads at start (plan.json), derived from the request and the spec."""
    return JobInputs(
        snrun_version=__version__,
        job_name=spec.name,
        site_file=str(job_dir / "site.yaml"),
        site_name=site.name,
        vendor=site.vendor,
        layout=spec.layout.as_dict(),
        nproc_per_node=spec.nproc_per_node,
        allow_partial=spec.allow_partial,
        strategy=request.strategy,
        supernodes=request.supernodes,
        nodes=request.nodes,
        max_restarts=spec.max_restarts,
        site_restarts=dict(site.restarts),
        preflight=spec.preflight,
        fork_workers=fork_workers,
        hang_timeout=_seconds(env, "SNRUN_HANG_TIMEOUT") or 0.0,
        hang_startup=_seconds(env, "SNRUN_HANG_STARTUP"),
        program_argv=tuple(program_argv(spec, snapshot, workdir)),
        python=python,
        workdir=workdir,
        request=request.as_dict(),
        snapshot=(
            {"dir": str(snapshot.dest), "source": str(snapshot.source), "module": snapshot.module}
            if snapshot
            else None
        ),
        container=container.to_dict() if container else None,
    )


def fork_default(spec: JobSpec, site: Site) -> bool:
    """Fork the workers from torchrun unless it is known not to work: a ``-m`` module (torchrun
    runs a file by path) and Ascend sites (torch_npu in forked workers is not verified)."""
    return not spec.module and site.vendor != "ascend"


def _seconds(env: dict[str, str], name: str) -> float | None:
    """A duration given through the environment (site profile or --env), checked at submit."""
    try:
        return parse_seconds(env.get(name, ""))
    except ValueError as exc:
        raise InputError(f"{name}={exc}", where=f"--env {name}") from None


def template_context(
    inputs: JobInputs, job_dir: Path, site_env: dict[str, str], user_env: dict[str, str]
) -> dict[str, Any]:
    """What the sbatch template sees: derived from the job inputs (one source of truth)."""
    req = inputs.request
    summary = (
        f"{inputs.nodes} nodes, "
        + (f"{inputs.supernodes} whole super node(s)" if inputs.supernodes else "partial")
        + f" via '{inputs.strategy}'"
    )
    return {
        "version": inputs.snrun_version,
        "site_name": inputs.site_name,
        "job_name": inputs.job_name,
        "request_summary": summary,
        "sbatch_args": list(req["sbatch_args"]),
        "job_dir": str(job_dir),
        "site_file": inputs.site_file,
        "max_restarts": inputs.max_restarts,
        "site_env": list(site_env.items()),
        "user_env": list(user_env.items()),
        "workdir": inputs.workdir,
        "python": inputs.python,
        "program_argv": list(inputs.program_argv),
        "agent_argv": agent_argv(inputs.python, job_dir, inputs.program_argv),
        "nodes": inputs.nodes,
        "supernodes": inputs.supernodes,
        "heterogeneous": bool(req["heterogeneous"]),
    }


def write_job_dir(plan: JobPlan) -> None:
    """Create the job directory with the script, request, plan, env and a copy of the site."""
    d = plan.job_dir
    code = None
    if plan.snapshot:  # checked (size, files) before the job directory exists
        code = collect_snapshot(plan.snapshot, limit_bytes(), skip=[d.parent])
    (d / "logs").mkdir(parents=True, exist_ok=True)
    if plan.snapshot and code:
        write_snapshot(plan.snapshot, *code)
    if plan.site.source and Path(plan.site.source).is_file():
        shutil.copyfile(plan.site.source, d / "site.yaml")
    else:
        raise InputError("the site has no source file to copy into the job directory")
    write_atomic(d / "job.sh", plan.script, mode=0o755)
    write_json_atomic(d / "request.json", plan.request.as_dict())
    write_atomic(d / INPUTS_FILE, plan.inputs.to_json())
    write_json_atomic(d / "env.json", plan.env)


def submit_job(
    plan: JobPlan,
    *,
    attempts: int = 3,
    backoff: float = 1.0,
    extra_args: tuple[str, ...] = (),
) -> int:
    """Write the job directory and submit with sbatch; returns the job id. An unreachable or
    busy controller is retried (``attempts`` calls, ``backoff`` s more between each).
    ``extra_args`` go to this sbatch only, after the request's (``--after``: the dependency
    and ``--hold``), not into the job's request (a resubmission does not repeat them)."""
    from slurm_supernode.slurm import jobs

    write_job_dir(plan)
    last: SlurmError | None = None
    args = [*plan.request.sbatch_args(), *extra_args]
    for i in range(attempts):
        try:
            job_id = jobs.submit(plan.script, args, cwd=plan.inputs.workdir)
            break
        except SlurmError as exc:
            # Retry only when the controller is busy/unreachable; refusals are final.
            if not exc.kind.transient:
                raise
            last = exc
            if i + 1 < attempts:
                time.sleep(backoff * (1 + i))
    else:
        raise last or SlurmError("sbatch failed")
    link_job_id(plan.job_dir.parent, plan.job_dir, job_id)
    write_json_atomic(plan.job_dir / "job.json", {"job_ids": [job_id], "submitted": time.time()})
    return job_id
