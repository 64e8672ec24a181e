"""What a tray says about its IMEX state: the channel devices of this step, the IMEX domain
(``nvidia-imex-ctl -N``) and the NVLink fabric (``nvidia-smi -q``: State, ClusterUUID, CliqueId
per GPU). Pure parsers plus the one function that asks the node (tools through ``run_tool``, a
tool that is not installed is "not known", never a failure)."""

from __future__ import annotations

import glob
import os
import re
import shutil
from dataclasses import dataclass

from slurm_supernode.site.imex import CHANNEL_DIR
from slurm_supernode.tools import run_tool

_GPU = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_CHANNEL = re.compile(r"^channel(\d+)$")


@dataclass(frozen=True)
class FabricGpu:
    """One GPU's ``Fabric`` section of ``nvidia-smi -q``."""

    bus_id: str
    state: str  # Completed, In Progress, Not Started, N/A
    cluster_uuid: str  # "" where N/A
    clique_id: str  # "" where N/A


@dataclass(frozen=True)
class TrayFacts:
    """One tray as its agent sees it in the job's step (None: the tool is not there)."""

    channels: tuple[int, ...] | None  # None: no channel directory at all
    domain_state: str | None  # "UP", "DOWN", ...; None: no nvidia-imex-ctl
    domain_error: str | None = None  # nvidia-imex-ctl failed: its first line
    fabric: tuple[FabricGpu, ...] | None = None  # None: no nvidia-smi


def channels_in(directory: str = CHANNEL_DIR) -> tuple[int, ...] | None:
    """The channel numbers whose device nodes this step sees (sorted); None: no directory."""
    if not os.path.isdir(directory):
        return None
    found = (_CHANNEL.match(os.path.basename(p)) for p in glob.glob(os.path.join(directory, "*")))
    return tuple(sorted(int(m.group(1)) for m in found if m))


def channel_devices(directory: str = CHANNEL_DIR) -> list[tuple[str, int, int]]:
    """(path, major, minor) of every channel device node this step sees: what an OCI bundle
    lists as its devices (runc makes them inside and lets the container open them)."""
    out = []
    for number in channels_in(directory) or ():
        path = os.path.join(directory, f"channel{number}")
        try:
            rdev = os.stat(path).st_rdev
        except OSError:
            continue
        out.append((path, os.major(rdev), os.minor(rdev)))
    return out


def parse_domain_state(text: str) -> str | None:
    """``Domain State: UP`` of ``nvidia-imex-ctl -N`` (None: no such line)."""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "domain state":
            return value.strip().upper() or None
    return None


def parse_fabric(text: str) -> tuple[FabricGpu, ...]:
    """Every GPU's Fabric section of ``nvidia-smi -q`` (GPUs without one are left out)."""
    out: list[FabricGpu] = []
    bus: str | None = None
    fields: dict[str, str] = {}
    fabric_indent: int | None = None
    for raw in text.splitlines():
        stripped = raw.strip()
        header = _GPU.match(stripped)
        if header:
            _add(out, bus, fields)
            bus, fields, fabric_indent = header.group(1).upper(), {}, None
            continue
        indent = len(raw) - len(raw.lstrip())
        if stripped == "Fabric":
            fabric_indent = indent
            continue
        if fabric_indent is not None and stripped and indent <= fabric_indent:
            fabric_indent = None
        if fabric_indent is not None and ":" in stripped:
            key, _, value = (p.strip() for p in stripped.partition(":"))
            if key in ("State", "ClusterUUID", "CliqueId") and key not in fields:
                fields[key] = value
    _add(out, bus, fields)
    return tuple(out)


def _add(out: list[FabricGpu], bus: str | None, fields: dict[str, str]) -> None:
    if bus is None or not fields:
        return

    def known(key: str) -> str:
        value = fields.get(key, "")
        return "" if value in ("N/A", "") else value

    out.append(FabricGpu(bus, fields.get("State", ""), known("ClusterUUID"), known("CliqueId")))


def tray_facts(directory: str = CHANNEL_DIR, timeout: float = 30.0) -> TrayFacts:
    """Ask this node: channel devices, the IMEX domain, the fabric (where the tools exist)."""
    state, error = None, None
    if shutil.which("nvidia-imex-ctl"):
        code, out = run_tool(["nvidia-imex-ctl", "-N"], timeout=timeout)
        state = parse_domain_state(out) if code == 0 else None
        if state is None:
            first = (out.strip().splitlines() or ["no Domain State line"])[0]
            error = f"nvidia-imex-ctl -N exited {code}: {first}"
    fabric = None
    if shutil.which("nvidia-smi"):
        code, out = run_tool(["nvidia-smi", "-q"], timeout=timeout)
        fabric = parse_fabric(out) if code == 0 else ()
    return TrayFacts(channels_in(directory), state, error, fabric)
