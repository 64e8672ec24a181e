"""Device paths (``/dev/...``) for an Apptainer container: which binds to pass, decided on the
node from the container's ``/dev``.

Apptainer mounts every user ``--bind`` with ``nodev`` (and ``nosuid``): a device node reached
through one cannot be opened (EACCES), so ``--bind /dev/nvidia-caps-imex-channels`` hides the
job's IMEX channel behind an unopenable node (measured on the test cluster: the rank saw
``channel1`` and got EACCES; bare metal, pyxis and OCI got ENXIO, i.e. only the missing driver
said no). Where the container's ``/dev`` is the host's (apptainer.conf ``mount dev = yes``, the
default, and no ``--contain``/``--containall``), Apptainer binds the host's ``/dev`` with every
mount under it (the step's channel directory included) and without ``nodev``: a ``/dev`` path
is then already there and must NOT be bound again. Where ``/dev`` is staged (``mount dev =
minimal`` or ``--contain``), Apptainer takes a ``--bind`` of a ``/dev`` path as a device of its
staged ``/dev`` (without ``nodev``): there the bind is what brings it in. The same holds for
every device path a site mounts (``/dev/infiniband``, Ascend's ``/dev/davinci*``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from slurm_supernode.site.containers import Mount
from slurm_supernode.tools import run_tool

DEV = "/dev"
# apptainer exec options that stage a minimal /dev (Apptainer's --contain / --containall)
CONTAIN_OPTIONS = frozenset({"-c", "--contain", "-C", "--containall"})
_MOUNT_DEV = re.compile(r"^\s*mount\s+dev\s*=\s*(\w+)", re.IGNORECASE | re.MULTILINE)


def mount_dev_setting(conf_text: str | None) -> str:
    """``mount dev`` of apptainer.conf (``yes``, ``minimal`` or ``no``); ``yes`` (Apptainer's
    default) when the file or the line is missing."""
    found = _MOUNT_DEV.findall(conf_text or "")
    return found[-1].lower() if found else "yes"


def host_dev(options: Sequence[str], mount_dev: str) -> bool:
    """Is the container's /dev the host's (every device there already, without nodev)?"""
    return mount_dev == "yes" and not any(o in CONTAIN_OPTIONS for o in options)


def is_device_path(mount: Mount) -> bool:
    """A bind of a /dev path at the same path (Apptainer skips /dev binds to another path)."""
    return mount.source.startswith(DEV + "/") and mount.source == mount.dest


def apptainer_binds(mounts: Sequence[Mount], options: Sequence[str], mount_dev: str) -> list[Mount]:
    """The binds to pass: all of them where /dev is staged; without the /dev paths where the
    container gets the host's /dev (binding one again would make it unopenable)."""
    if not host_dev(options, mount_dev):
        return list(mounts)
    return [m for m in mounts if not is_device_path(m)]


def node_mount_dev(timeout: float = 10.0) -> str:
    """``mount dev`` of this node's apptainer.conf (``apptainer buildcfg SYSCONFDIR`` says
    where it is); ``yes`` where it cannot be read (Apptainer's default)."""
    code, out = run_tool(["apptainer", "buildcfg", "SYSCONFDIR"], timeout=timeout)
    lines = out.strip().splitlines()
    if code != 0 or not lines:
        return "yes"
    try:
        with open(f"{lines[-1].strip()}/apptainer/apptainer.conf", encoding="utf-8") as fh:
            return mount_dev_setting(fh.read())
    except OSError:
        return "yes"
