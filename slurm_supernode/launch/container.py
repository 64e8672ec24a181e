"""The container of a job's training step: what the user asked, checked against the site.

The batch script, the supervisor and the per-node agent stay on the host; the agent starts
torchrun (and so every rank of its node) inside one container per node. ``ContainerOptions``
(launch/container_options.py) are the options as given; ``ContainerSpec``, checked, is
what ``plan.json`` keeps and the agent renders per runtime (``container_render``). Everything
the site cannot serve, and a local image that is not there, is refused here, at submit.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from slurm_supernode.errors import InputError, JobError
from slurm_supernode.launch.container_runtime import choose_runtime
from slurm_supernode.site.containers import VENDOR_MOUNTS, parse_mount
from slurm_supernode.site.imex import CHANNEL_DIR as IMEX_MOUNT
from slurm_supernode.site.model import CONTAINER_RUNTIMES, Site

if TYPE_CHECKING:
    from slurm_supernode.launch.container_options import ContainerOptions
    from slurm_supernode.slurm.container_runtimes import ContainerRuntimes

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# pyxis: [USER@][REGISTRY#]IMAGE[:TAG][@DIGEST]; Apptainer: docker://, oras://, library://...
_REGISTRY_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@#/:+-]*$")
_APPTAINER_SCHEMES = ("docker://", "docker-daemon://", "oras://", "library://", "shub://")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_LIST_FIELDS = ("mounts", "optional_mounts", "env", "options", "pythonpath")
OCI_ROOT_PATH_SINCE = (23, 2)  # Slurm OCI keeps config.json's root.path from this release on
SNRUN_LIB = "snrun-lib"  # in the job directory: where snrun's package is mounted inside


@dataclass(frozen=True)
class ContainerSpec:
    """The checked container of a job, as plan.json keeps it."""

    runtime: str  # one of CONTAINER_RUNTIMES
    image: str  # an absolute local path, or a registry reference
    python: str  # the interpreter inside the image that runs torchrun
    mounts: tuple[str, ...]  # always mounted: the job's paths, the site's, the user's
    optional_mounts: tuple[str, ...] = ()  # the vendor's: mounted where the node has the source
    workdir: str = ""  # where torchrun starts inside the container
    env: tuple[str, ...] = ()  # job variables that override the image's (besides snrun's own)
    name: str | None = None  # pyxis: a named container, reused by every restart of the job
    mount_home: bool | None = None
    options: tuple[str, ...] = ()  # the site's own options of the runtime (--userns, ...)
    # directories inside put first on PYTHONPATH (snrun's own package, for bench and doctor)
    pythonpath: tuple[str, ...] = ()
    # Slurm OCI before 23.02 (22.05) takes the container's root from BUNDLE/rootfs and ignores
    # config.json's root.path (measured; no Slurm command tells it, so the running Slurm's
    # version decides at submit): the bundle then gets a rootfs of its own (container_render)
    oci_rootfs_in_bundle: bool = False

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in _LIST_FIELDS:
            out[key] = list(out[key])
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "plan.json") -> ContainerSpec:
        values: dict[str, Any] = {k: tuple(v) if k in _LIST_FIELDS else v for k, v in data.items()}
        try:
            spec = cls(**values)
        except TypeError as exc:
            raise JobError(f"bad container in the job inputs: {exc}", where=where) from None
        if spec.runtime not in CONTAINER_RUNTIMES or not spec.image or not spec.python:
            raise JobError(f"bad container in the job inputs: {dict(data)!r}", where=where)
        return spec


def own_package() -> str:
    """snrun's own package directory: mounted into the image where snrun's in-job part (bench,
    doctor, health's all-reduce) runs there (``resolve_container``'s ``snrun_package``)."""
    return str(Path(__file__).resolve().parent.parent)


def split_list(text: str | None) -> list[str]:
    """A comma-separated option value; empty items dropped."""
    return [item.strip() for item in (text or "").split(",") if item.strip()]


def resolve_container(
    options: ContainerOptions | None,
    site: Site,
    *,
    job_dir: Path,
    workdir: str,
    extra_paths: tuple[str, ...] = (),
    available: ContainerRuntimes | None = None,
    snrun_package: str | None = None,
    slurm_version: tuple[int, ...] | None = None,
) -> ContainerSpec | None:
    """Check the options against the site, the running Slurm and the image; None without an
    image (the companions alone are refused: ``ContainerOptions.wanted_image``).
    ``extra_paths``: more host paths the job needs at the same path (the code snapshot);
    ``available``: the runtimes the running Slurm offers (None: not asked);
    ``snrun_package``: snrun's package directory, mounted read-only into the job directory
    and put first on PYTHONPATH (the image's python then runs snrun's in-job part; only the
    package, not the site-packages around it, whose torch would hide the image's);
    ``slurm_version``: the running Slurm's (None: not asked), for Slurm OCI's root."""
    wanted = options.wanted_image() if options is not None else None
    if options is None or wanted is None:
        return None
    settings = site.containers
    runtime = choose_runtime(settings.runtime, site.name, available)
    image = _check_image(wanted, runtime, settings.image_dir)
    user_mounts, env = _user_mounts(options), _user_env(options)
    _check_workdir_and_name(options, runtime, site.name)
    # The job's own paths at the same path inside: every path in plan.json stays valid.
    same = [str(job_dir), *extra_paths]
    if options.workdir is None:
        same.append(workdir)
    auto = [f"{p}:{p}" for p in _outermost(same)]
    own: list[str] = []
    pythonpath: tuple[str, ...] = ()
    if snrun_package:
        lib = job_dir / SNRUN_LIB
        own, pythonpath = [f"{snrun_package}:{lib / 'slurm_supernode'}:ro"], (str(lib),)
    mounts = _unique([*auto, *own, *settings.mounts, *user_mounts])
    vendor = VENDOR_MOUNTS.get(site.vendor, ()) if settings.vendor_mounts else ()
    if site.imex_channels:  # the step's IMEX channel, wherever the node has the directory
        vendor = (*vendor, IMEX_MOUNT)
    return ContainerSpec(
        runtime=runtime,
        image=image,
        python=settings.python,
        mounts=tuple(mounts),
        optional_mounts=tuple(m for m in vendor if m not in mounts),
        workdir=options.workdir or workdir,
        env=tuple(_unique([*settings.env, *env])),
        name=options.name,
        mount_home=options.mount_home,
        options=settings.options,
        pythonpath=pythonpath,
        oci_rootfs_in_bundle=runtime == "oci"
        and slurm_version is not None
        and tuple(slurm_version[:2]) < OCI_ROOT_PATH_SINCE,
    )


_MOUNT_HINT = "SRC[:DST[:ro|rw]],... with absolute paths"


def _user_mounts(options: ContainerOptions) -> list[str]:
    """--container-mounts as mount specs, the first bad one refused."""
    user_mounts = []
    for item in split_list(options.mounts):
        try:
            user_mounts.append(parse_mount(item).spec())
        except ValueError as exc:
            raise InputError(str(exc), where="--container-mounts", hint=_MOUNT_HINT) from None
    return user_mounts


def _user_env(options: ContainerOptions) -> list[str]:
    """--container-env: names of variables passed into the container."""
    env = []
    for name in split_list(options.env):
        if not _ENV_NAME.match(name):
            raise InputError(
                f"bad variable name {name!r}", where="--container-env", hint="NAME,NAME,..."
            )
        env.append(name)
    return env


def _check_workdir_and_name(options: ContainerOptions, runtime: str, site_name: str) -> None:
    """An absolute --container-workdir; --container-name only where pyxis keeps containers."""
    if options.workdir is not None and not options.workdir.startswith("/"):
        raise InputError(
            f"{options.workdir!r} is not an absolute path",
            where="--container-workdir",
            hint="the directory inside the container where torchrun starts",
        )
    if options.name is not None:
        if runtime != "pyxis":
            raise InputError(
                f"named containers need pyxis; site {site_name} runs {runtime}",
                where="--container-name",
                hint="drop --container-name: each attempt starts the image afresh",
            )
        if not _NAME.match(options.name):
            raise InputError(
                f"bad container name {options.name!r}",
                where="--container-name",
                hint="letters, digits, '_', '.', '-'",
            )


def _check_image(image: str, runtime: str, image_dir: str) -> str:
    """The image as the runtime will be given it: a checked absolute path, or a reference."""
    where = "--container-image"
    if not image.strip():
        raise InputError("empty image", where=where)
    if runtime == "apptainer" and image.startswith(_APPTAINER_SCHEMES):
        return image
    local = image.startswith(("/", "./", "../")) or runtime == "oci"
    path = Path(image) if image.startswith("/") else None
    if path is None and image.startswith(("./", "../")):
        path = Path(os.path.abspath(image))
    if path is None and image_dir:
        candidate = Path(image_dir, image)
        if local or candidate.exists():
            path, local = candidate, True
    if path is None and runtime == "oci":
        path = Path(os.path.abspath(image))
    if path is None:
        if runtime == "pyxis" and _REGISTRY_REF.match(image):
            return image  # imported by enroot on the nodes
        raise InputError(
            f"{image!r} is neither a local image nor a registry reference",
            where=where,
            hint="a path (/abs/img.sqsh, ./img.sif) or, with pyxis, [REGISTRY#]IMAGE[:TAG]",
        )
    if not path.exists():
        raise InputError(
            f"image {str(path)!r} does not exist",
            where=where,
            hint="images are read on every node at this path: build or copy it there first",
        )
    if runtime == "oci":
        _check_bundle(path)
    elif runtime == "pyxis" and not path.is_file():
        raise InputError(f"{str(path)!r} is not a squashfs file", where=where)
    if not os.access(path, os.R_OK):
        raise InputError(f"image {str(path)!r} is not readable", where=where)
    return str(path)


def _check_bundle(path: Path) -> None:
    """An OCI bundle: config.json (JSON with a root path) and that root directory."""
    where = "--container-image"
    hint = "an OCI bundle directory: config.json and its rootfs (runc spec, umoci unpack)"
    try:
        config = json.loads((path / "config.json").read_text())
        root = config["root"]["path"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else f"no valid config.json ({exc})"
        raise InputError(f"{str(path)!r}: {why}", where=where, hint=hint) from None
    if not isinstance(root, str) or not (path / root).is_dir():
        raise InputError(f"{str(path)!r}: its root {root!r} is no directory", where=where)


def _outermost(paths: list[str]) -> list[str]:
    """The paths without those inside another one of them (one mount covers both)."""
    norm = _unique([os.path.normpath(p) for p in paths if p])
    return [p for p in norm if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in norm)]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
