"""The agent's torchrun, put into the job's container (``launch.container``). Pure planning:
the agent writes the files and runs the argv (``runtime.agent``); ``--dry-run`` shows it."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from slurm_supernode.launch.container import ContainerSpec
from slurm_supernode.launch.container_render import (
    ContainerLaunch,
    apptainer_prefix,
    enter_script,
    inner_argv,
    node_mounts,
    oci_bundle_config,
    oci_mount_points,
    passed_env,
    pyxis_options,
)
from slurm_supernode.runtime.apptainer_dev import apptainer_binds, node_mount_dev
from slurm_supernode.runtime.imex_probe import channel_devices as step_channel_devices
from slurm_supernode.site.containers import Mount
from slurm_supernode.site.imex import CHANNEL_DIR
from slurm_supernode.slurm.steps import node_step_command

CONTAINER_DIR = "container"  # in the job directory: enter scripts and OCI bundles


def plan_container_launch(
    spec: ContainerSpec,
    torchrun_argv: list[str],
    env: Mapping[str, str],
    *,
    base_env: Mapping[str, str],
    names: Iterable[str],
    job_dir: Path,
    hostname: str,
    attempt: int,
    job_id: int,
    vendor: str,
    extra_mounts: Iterable[str] = (),
    image_config: Mapping[str, Any] | None = None,
    home: str | None = None,
    exists: Callable[[str], bool] = os.path.exists,
    channel_devices: Callable[[], list[tuple[str, int, int]]] = step_channel_devices,
    torchrun: bool = True,
    mount_dev: Callable[[], str] = node_mount_dev,
) -> ContainerLaunch:
    """``torchrun_argv`` is the bare-metal one (``PYTHON -m torch.distributed.run ...``): its
    python is replaced by the image's. ``names``: variables to pass besides snrun's own (the
    site's and the user's env); ``image_config``: the OCI image's config.json; ``torchrun``:
    the command is torchrun's entry, which marks the start itself (else the enter script);
    ``mount_dev``: this node's Apptainer ``mount dev`` setting (runtime/apptainer_dev.py)."""
    if extra_mounts:
        spec = dataclasses.replace(spec, mounts=(*spec.mounts, *extra_mounts))
    mounts = node_mounts(spec, exists)
    base = job_dir / CONTAINER_DIR / f"{hostname}.{attempt}"
    enter, started = f"{base}.enter.sh", f"{base}.started"
    passed = passed_env(env, base_env, [*spec.env, *names])
    if spec.pythonpath:
        passed["PYTHONPATH"] = os.pathsep.join([*spec.pythonpath, *_given(passed, "PYTHONPATH")])
    files = {enter: enter_script(passed, spec.workdir, started, by_torchrun=torchrun)}
    # mount points inside the job directory are made there first: not every runtime makes
    # one inside another bind mount
    inside = tuple(m.dest for m in mounts if m.dest.startswith(f"{job_dir}/"))
    inner = inner_argv(enter, spec.python, list(torchrun_argv[1:]))
    shown = tuple(m.spec() for m in mounts)
    if spec.runtime == "pyxis":
        argv = node_step_command(job_id, hostname, pyxis_options(spec, mounts), inner)
        return ContainerLaunch(argv, True, files, inside, shown, started)
    if spec.runtime == "oci":
        mounts, devices = oci_imex_devices(mounts, channel_devices)
        config = oci_bundle_config(image_config or {}, spec, mounts, home, devices)
        files[f"{base}/config.json"] = json.dumps(config, indent=2) + "\n"
        argv = node_step_command(job_id, hostname, [f"--container={base}"], inner)
        points = oci_mount_points(image_config or {}, spec, mounts, home)
        rootfs = (f"{base}/rootfs",) if spec.oci_rootfs_in_bundle else ()  # 22.05's root
        return ContainerLaunch(argv, True, files, (*rootfs, *inside), shown, started, points)
    mounts = apptainer_binds(mounts, spec.options, mount_dev())  # /dev paths: see there
    argv = [*apptainer_prefix(spec, mounts, vendor), *inner]
    return ContainerLaunch(argv, False, files, inside, tuple(m.spec() for m in mounts), started)


def oci_imex_devices(
    mounts: list[Mount], devices: Callable[[], list[tuple[str, int, int]]]
) -> tuple[list[Mount], list[tuple[str, int, int]]]:
    """OCI takes the IMEX channel as a device of its bundle, not as the directory's bind mount:
    (the other mounts, the channel devices this step has)."""
    if not any(m.source == CHANNEL_DIR for m in mounts):
        return mounts, []
    return [m for m in mounts if m.source != CHANNEL_DIR], devices()


def write_launch_files(plan: ContainerLaunch) -> None:
    """Write what ``plan`` runs on this node: its directories, the OCI mount points (best
    effort: a read-only image is the runtime's to judge), the enter script and bundle."""
    import contextlib

    from slurm_supernode.fsutil import write_atomic

    for folder in plan.dirs:
        Path(folder).mkdir(parents=True, exist_ok=True)
    for point in plan.mount_points:
        with contextlib.suppress(OSError):
            Path(point).mkdir(parents=True, exist_ok=True)
    for path, text in plan.files.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(Path(path), text)


def runtime_error(stderr_tail: str, code: int) -> str:
    """The container runtime's last words (one line), for the ledger and ``snrun status``."""
    lines = [line.strip() for line in stderr_tail.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("srun: error:")] or lines
    return (lines[-1] if lines else f"exit code {code}")[:300]


def runtime_output(stderr_tail: str, lines: int = 20) -> list[str]:
    """The container's last lines (the runtime's, the shell's, python's traceback), for
    ``snrun logs`` of an attempt whose container did not start."""
    kept = [line.rstrip() for line in stderr_tail.splitlines() if line.strip()]
    return [line[:500] for line in kept[-lines:]]


def _given(env: Mapping[str, str], name: str) -> list[str]:
    return [p for p in env.get(name, "").split(os.pathsep) if p]


def read_image_config(spec: ContainerSpec) -> dict[str, Any] | None:
    """The OCI image's config.json (checked at submit; a node that cannot read it fails the
    attempt with the reason). None for the other runtimes."""
    if spec.runtime != "oci":
        return None
    from slurm_supernode.errors import JobError

    path = Path(spec.image, "config.json")
    try:
        config: dict[str, Any] = json.loads(path.read_text())
        return config
    except (OSError, ValueError) as exc:
        raise JobError(f"cannot read the image's config.json: {exc}", where=str(path)) from None
