"""How one node's torchrun enters its container, per runtime. Pure: values in, argv/text out.

Every runtime gets the same inner command, ``/bin/sh ENTER torchrun...``: ENTER is a small
script in the job directory (mounted at the same path) that exports the variables the ranks
must see whatever the image sets (snrun's, NCCL/HCCL/MASTER_*, the site's and the user's),
changes to the working directory and ignores SIGUSR1/2 in torchrun (only the ranks act on
them; the signal reaches every process of the step). Around it:

- pyxis: options of an ``srun --overlap`` step on this node (slurm.steps builds the srun);
- oci: ``--container=BUNDLE`` on that step, BUNDLE a per-node config.json in the job
  directory made from the image's own (root path, snrun's mounts, no PID namespace);
- apptainer: an ``apptainer exec`` prefix the agent runs itself.
"""

from __future__ import annotations

import copy
import os
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from slurm_supernode.launch.container import ContainerSpec
from slurm_supernode.site.containers import Mount, parse_mount

# Variables that always pass into the container, by prefix (besides the names listed).
PASS_PREFIXES = (
    "SNRUN_", "NCCL_", "HCCL_", "MASTER_", "TORCH_", "TORCHELASTIC_", "PYTORCH_", "CUDA_",
    "ASCEND_", "RANK_", "GLOO_", "OMP_", "NVIDIA_",
)  # fmt: skip
PASS_NAMES = ("PYTHONPATH", "PYTHONSAFEPATH", "PYTHONUNBUFFERED", "PYTHONFAULTHANDLER")
# Namespaces a container of ranks must not have: PID (torchrun's rendezvous and scancel need
# the host's PIDs), network and UTS (the ranks talk over the host's network by host name).
_DROP_NAMESPACES = ("pid", "network", "uts", "user", "cgroup")


@dataclass(frozen=True)
class ContainerLaunch:
    """What the agent runs on one node, and the files it writes first."""

    argv: list[str]
    via_srun: bool  # the argv is an srun step (pyxis, oci): signals go through srun
    files: dict[str, str] = field(default_factory=dict)  # path -> text (written before argv)
    dirs: tuple[str, ...] = ()  # directories to create before argv
    mounts: tuple[str, ...] = ()  # the mounts this node gets (for the record)
    started: str = ""  # the file torchrun's python creates once it runs in the container
    # OCI: the bind mounts' destinations in the image's root, made before runc runs (best
    # effort): containers of several nodes that share one image root (a shared file system, or
    # a test cluster on one machine) would otherwise race in runc's own mkdir ("file exists")
    mount_points: tuple[str, ...] = ()


def passed_env(
    env: Mapping[str, str], base: Mapping[str, str], names: Iterable[str]
) -> dict[str, str]:
    """The variables of ``env`` that go into the container: snrun's prefixes, the listed
    ``names`` (site, user, --container-env), and every one the agent set or changed against
    the job's ``base`` environment."""
    wanted = set(names) | set(PASS_NAMES)
    return {
        k: v
        for k, v in env.items()
        if k.startswith(PASS_PREFIXES) or k in wanted or base.get(k) != v
    }


def enter_script(
    env: Mapping[str, str], workdir: str, started: str | None = None, *, by_torchrun: bool = True
) -> str:
    """The in-container prologue: export, cd, shield torchrun from SIGUSR1/2, exec.
    ``started``: the file torchrun's python creates once it has imported torchrun in the image
    (runtime/fast_exit.py, told by ``STARTED_ENV``), so the agent tells a container that never
    got that far (the runtime failed, no python, no torch, a missing library, a bad entry
    point: cause ``container``) from a training failure. ``by_torchrun`` False (a command that
    is not torchrun, e.g. health's all-reduce): the script creates it first itself."""
    lines = ["#!/bin/sh", "# written by snrun's agent: what the ranks see inside the container"]
    if started and by_torchrun:
        lines.append(f"export {STARTED_ENV}={shlex.quote(started)}")
    elif started:
        lines.append(f": > {shlex.quote(started)}")
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
    lines += [
        f"cd {shlex.quote(workdir)} || exit 125",
        "trap '' USR1 USR2",
        'exec "$@"',
    ]
    return "\n".join(lines) + "\n"


STARTED_ENV = "SNRUN_CONTAINER_STARTED"  # runtime/fast_exit.py reads the same name


def node_mounts(spec: ContainerSpec, exists: Callable[[str], bool]) -> list[Mount]:
    """The mounts of this node: the spec's, then the vendor's where the node has them."""
    mounts = [parse_mount(m) for m in spec.mounts]
    mounts += [m for m in map(parse_mount, spec.optional_mounts) if exists(m.source)]
    return mounts


def pyxis_options(spec: ContainerSpec, mounts: list[Mount]) -> list[str]:
    """pyxis' srun options: the image, mounts, workdir; a named container if asked."""
    opts = [f"--container-image={spec.image}"]
    if mounts:
        opts.append("--container-mounts=" + ",".join(m.spec() for m in mounts))
    opts.append(f"--container-workdir={spec.workdir}")
    if spec.name:
        opts.append(f"--container-name={spec.name}")
    if spec.mount_home is not None:
        opts.append("--container-mount-home" if spec.mount_home else "--no-container-mount-home")
    return [*opts, *spec.options]


def apptainer_prefix(spec: ContainerSpec, mounts: list[Mount], vendor: str) -> list[str]:
    """``apptainer exec`` with the site's options, the binds, the working directory and the
    GPUs."""
    cmd = ["apptainer", "exec", *spec.options]
    if vendor == "nvidia":
        cmd.append("--nv")
    if mounts:
        cmd += ["--bind", ",".join(m.spec() for m in mounts)]
    cmd += ["--pwd", spec.workdir]
    if spec.mount_home is False:
        cmd.append("--no-home")
    return [*cmd, spec.image]


def oci_image_root(image_config: Mapping[str, Any], spec: ContainerSpec) -> str:
    """The image's root directory (config.json's ``root.path``, default ``rootfs``)."""
    root = dict(image_config.get("root") or {})
    return os.path.normpath(os.path.join(spec.image, root.get("path") or "rootfs"))


def oci_mount_points(
    image_config: Mapping[str, Any],
    spec: ContainerSpec,
    mounts: list[Mount],
    home: str | None,
    is_dir: Callable[[str], bool] = os.path.isdir,
) -> tuple[str, ...]:
    """Where snrun's directory bind mounts land inside the image's root (ContainerLaunch)."""
    root = oci_image_root(image_config, spec)
    binds = [*mounts, *([Mount(home, home)] if spec.mount_home and home else [])]
    return tuple(
        dict.fromkeys(
            os.path.join(root, m.dest.lstrip("/"))
            for m in binds
            if m.dest != "/" and is_dir(m.source)
        )
    )


def oci_bundle_config(
    image_config: Mapping[str, Any],
    spec: ContainerSpec,
    mounts: list[Mount],
    home: str | None,
    devices: Sequence[tuple[str, int, int]] = (),
) -> dict[str, Any]:
    """The job's config.json for this node from the image's: the image's root, snrun's bind
    mounts added, the working directory set, no PID/network/UTS namespace.

    The root: ``root.path`` the image's root as an absolute path, which Slurm >= 23.02 keeps
    (runc >= 1.2 refuses a bind mount over ``/``, every runc a symlinked root). Slurm 22.05
    takes the root from BUNDLE/rootfs whatever config.json says (``spec.oci_rootfs_in_bundle``):
    there the bundle's own ``rootfs`` is an empty directory with the image's root bind-mounted
    over ``/``, which runc 1.1 (Debian 12's, beside 22.05) accepts."""
    config = copy.deepcopy(dict(image_config))
    root = dict(config.get("root") or {})
    image_root, readonly = oci_image_root(config, spec), bool(root.get("readonly"))
    over_root: list[dict[str, Any]] = []
    if spec.oci_rootfs_in_bundle:
        config["root"] = {"path": "rootfs", "readonly": False}
        over_root.append(
            {
                "destination": "/",
                "type": "none",
                "source": image_root,
                "options": ["rbind", "ro" if readonly else "rw"],
            }
        )
    else:
        config["root"] = {"path": image_root, "readonly": readonly}
    binds = list(mounts)
    if spec.mount_home and home:
        binds.append(Mount(home, home))
    extra = [
        {
            "destination": m.dest,
            "type": "none",
            "source": m.source,
            "options": ["rbind", "ro" if m.readonly else "rw"],
        }
        for m in binds
    ]
    config["mounts"] = [*over_root, *list(config.get("mounts") or []), *extra]
    config.pop("hostname", None)  # no UTS namespace: the node's own name
    process = dict(config.get("process") or {})
    process["cwd"] = spec.workdir
    process["terminal"] = False
    config["process"] = process
    linux = dict(config.get("linux") or {})
    linux["namespaces"] = [
        ns for ns in linux.get("namespaces") or [] if ns.get("type") not in _DROP_NAMESPACES
    ]
    linux.pop("uidMappings", None)
    linux.pop("gidMappings", None)
    config["linux"] = oci_devices(linux, devices)
    return config


def oci_devices(
    linux: Mapping[str, Any], devices: Sequence[tuple[str, int, int]]
) -> dict[str, Any]:
    """``linux`` with character devices (path, major, minor) made inside the container and
    allowed by its device rules: how an OCI bundle gets the step's IMEX channel (a bind mount of
    the node would be denied by runc's default ``deny all`` device rule; NCCL then says "MNNVL
    is available but not working")."""
    out = dict(linux)
    if not devices:
        return out
    listed = [
        d for d in out.get("devices") or [] if d.get("path") not in {p for p, _, _ in devices}
    ]
    listed += [
        {"path": p, "type": "c", "major": ma, "minor": mi, "fileMode": 0o666, "uid": 0, "gid": 0}
        for p, ma, mi in devices
    ]
    resources = dict(out.get("resources") or {})
    rules = list(resources.get("devices") or [])
    rules += [
        {"allow": True, "type": "c", "major": ma, "minor": mi, "access": "rwm"}
        for _, ma, mi in devices
    ]
    resources["devices"] = rules
    out["devices"], out["resources"] = listed, resources
    return out


def inner_argv(enter_path: str, python: str, torchrun_args: list[str]) -> list[str]:
    """What runs inside: the enter script, then the image's python running torchrun."""
    return ["/bin/sh", enter_path, python, *torchrun_args]
