"""``snrun health --allreduce --container-image``: the all-reduce in the image users train
with, on this node. Only the all-reduce goes in: it is the check of the software stack (torch,
NCCL/gloo); devices, vendor tools, the kernel log, IMEX and disk are the host's and stay there.

The image is checked and entered as a job's (``launch.container``, ``runtime.container_launch``:
the site's runtime, mounts and variables; snrun's package mounted read-only and first on
``PYTHONPATH``), in a scratch directory that stands in for the job directory. pyxis and Slurm
OCI start a container only as a step of a job, so there the check must run inside one (an
``srun`` step, the batch script; not a prolog, where no step can start, nor Slurm's
HealthCheckProgram); Apptainer runs anywhere.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from slurm_supernode.errors import InputError, SlurmError
from slurm_supernode.health.checks import CRITICAL, UNKNOWN, CheckResult
from slurm_supernode.jobenv import JobEnvironment

if TYPE_CHECKING:
    from slurm_supernode.health.probe import HealthOptions
    from slurm_supernode.launch.container import ContainerSpec
    from slurm_supernode.launch.container_render import ContainerLaunch
    from slurm_supernode.site.model import Site
    from slurm_supernode.slurm.container_runtimes import ContainerRuntimes

STEP_RUNTIMES = ("pyxis", "oci")  # they start a container only as a job step (srun)
START_ALLOWANCE = 120.0  # s on top of the all-reduce's timeout: the runtime's start (an import)
_WHERE = "--container-image"


def in_job(environ: Mapping[str, str]) -> bool:
    """Can this process start a step of its job? In a job (``SLURM_JOB_ID``) but not in a
    prolog or epilog (``SLURM_SCRIPT_CONTEXT``), where the job's steps cannot start yet."""
    job = JobEnvironment.from_environ(environ)
    return job.job_id is not None and job.script_context is None


def allreduce_in_image(
    site: Site | None, options: HealthOptions, environ: Mapping[str, str] | None = None
) -> CheckResult:
    """The all-reduce check of ``options`` run in ``options.container``'s image on this node.
    Refused (InputError) where it cannot run: no site, no such runtime, a local image that is
    not there, pyxis or Slurm OCI outside a job. An image that does not start is UNKNOWN (not
    the node's fault: no drain); a failed or hung all-reduce inside is CRITICAL."""
    from slurm_supernode.launch.container_runtime import choose_runtime
    from slurm_supernode.slurm.container_runtimes import detect_container_runtimes

    environ = os.environ if environ is None else environ
    if options.container.wanted_image() is None:
        raise InputError("no image given", where=_WHERE)
    if site is None:
        raise InputError(
            "the container settings (runtime, python, mounts) come from the site, and none was "
            "given",
            where=_WHERE,
            hint="--site NAME or $SNRUN_SITE",
        )
    available = detect_container_runtimes()
    runtime = choose_runtime(site.containers.runtime, site.name, available)
    if runtime in STEP_RUNTIMES and not in_job(environ):
        raise InputError(
            f"site {site.name} runs {runtime}, which starts a container only as a step of a "
            "job, and this check runs outside one (HealthCheckProgram, a prolog, a shell)",
            where=_WHERE,
            hint="run it in a job (srun -N1 snrun health --allreduce --container-image ...), "
            "or use snrun doctor --container-image",
        )
    version = None
    if runtime == "oci":
        from slurm_supernode.slurm.version import slurm_version

        found = slurm_version()
        version = (found.major, found.minor, found.patch)
    with tempfile.TemporaryDirectory(prefix="snrun-health-", ignore_cleanup_errors=True) as work:
        spec, launch = _planned(site, options, environ, Path(work), available, version)
        return _run(spec, launch, options.timeout + START_ALLOWANCE)


def _planned(
    site: Site,
    options: HealthOptions,
    environ: Mapping[str, str],
    work: Path,
    available: ContainerRuntimes,
    version: tuple[int, ...] | None,
) -> tuple[ContainerSpec, ContainerLaunch]:
    """Check the image as a job's (``work`` standing in for the job directory), plan the
    all-reduce's command in it and write its files (the enter script, an OCI bundle)."""
    from slurm_supernode.health.allreduce import world_of
    from slurm_supernode.launch.container import own_package, resolve_container
    from slurm_supernode.runtime.container_launch import (
        plan_container_launch,
        read_image_config,
        write_launch_files,
    )

    spec = resolve_container(
        options.container,
        site,
        job_dir=work,
        workdir=str(work),
        available=available,
        snrun_package=own_package(),
        slurm_version=version,
    )
    assert spec is not None  # an image gives a spec (allreduce_in_image checked it)
    node = site.node(options.node) if site.has_node(options.node) else None
    backend, nproc = world_of(
        options.allreduce_backend, node.devices if node else 0, options.allreduce_nproc
    )
    check = [sys.executable, "-m", "slurm_supernode.health.allreduce", "check"]
    launch = plan_container_launch(
        spec,
        [*check, str(nproc), backend, f"{options.timeout:g}"],
        dict(environ),
        base_env=environ,
        names=(),
        job_dir=work,
        hostname=options.node,
        attempt=0,
        job_id=JobEnvironment.from_environ(environ).job_id or 0,
        vendor=site.vendor,
        image_config=read_image_config(spec),
        home=environ.get("HOME"),
        torchrun=False,  # no torchrun here: the enter script marks the start itself
    )
    write_launch_files(launch)
    return spec, launch


def _run(spec: ContainerSpec, launch: ContainerLaunch, timeout: float) -> CheckResult:
    """Run the planned command; its result line, or why there is none."""
    from slurm_supernode import tools
    from slurm_supernode.runtime.container_launch import runtime_error

    if launch.via_srun:
        from slurm_supernode.slurm.runner import run_slurm

        try:
            proc = run_slurm(launch.argv, timeout=timeout, check=False)
            code, output = proc.returncode, proc.stdout + proc.stderr
        except SlurmError as exc:  # the step outlived the timeout, or Slurm did not answer
            code, output = 1, str(exc)
    else:
        code, output = tools.run_tool(launch.argv, timeout)
    where = f"{spec.runtime} image {spec.image}"
    result = parse_result(output)
    if result is not None:
        return CheckResult(result.name, result.status, f"{result.message} (in the {where})")
    if not os.path.exists(launch.started):
        why = runtime_error(output, code)
        return CheckResult("allreduce", UNKNOWN, f"the {where} did not start: {why}")
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    last = lines[-1][:300] if lines else f"exit code {code}"
    return CheckResult("allreduce", CRITICAL, f"all-reduce in the {where} gave no result: {last}")


def parse_result(output: str) -> CheckResult | None:
    """The check's result line (``health.allreduce``'s ``check`` prints it), if any."""
    from slurm_supernode.health.allreduce import RESULT_PREFIX

    for line in reversed(output.splitlines()):
        if line.startswith(RESULT_PREFIX):
            try:
                data = json.loads(line[len(RESULT_PREFIX) :])
                return CheckResult(str(data["name"]), int(data["status"]), str(data["message"]))
            except (ValueError, KeyError, TypeError):
                return None
    return None
