"""Which container runtimes the running Slurm offers: read from it, never assumed.

- pyxis: a line of plugstack.conf (``PlugStackConfig`` of ``scontrol show config``, else
  beside slurm.conf; ``include`` lines followed) that loads ``spank_pyxis.so``;
- oci: ``oci.conf`` beside slurm.conf (without it Slurm silently runs ``--container`` steps on
  the host);
- apptainer: ``apptainer --version`` answers here (the nodes are taken to have the login
  node's software; a node without it fails the attempt with the runtime's message).
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from slurm_supernode.errors import SlurmError
from slurm_supernode.slurm.parse import parse_config
from slurm_supernode.slurm.runner import run_slurm

RUNTIME_ORDER = ("pyxis", "oci", "apptainer")  # the pick when the site names none
_PYXIS = re.compile(r"^\s*(required|optional)\s+\S*spank_pyxis\.so\b")
_INCLUDE = re.compile(r"^\s*include\s+(\S+)")


@dataclass(frozen=True)
class ContainerRuntimes:
    """What was found (runtime -> where) and why each other one is not there (in words)."""

    found: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    def first(self) -> str | None:
        """The runtime to use when the site names none: pyxis, then oci, then apptainer."""
        return next((r for r in RUNTIME_ORDER if r in self.found), None)


def _conf_dir(config: dict[str, str]) -> str | None:
    conf = config.get("SLURM_CONF") or os.environ.get("SLURM_CONF") or ""
    return os.path.dirname(conf) if conf.startswith("/") else None


def _plugstack_path(config: dict[str, str], conf_dir: str | None) -> str | None:
    given = (config.get("PlugStackConfig") or "").strip()
    if given and given != "(null)":
        return given
    return os.path.join(conf_dir, "plugstack.conf") if conf_dir else None


def _pyxis_line(path: str, read: Callable[[str], str | None], depth: int = 0) -> str | None:
    """The plugstack file (or one it includes) that loads pyxis; None if none does."""
    text = read(path)
    if text is None or depth > 4:
        return None
    for line in text.splitlines():
        if _PYXIS.match(line):
            return path
        inc = _INCLUDE.match(line)
        if inc:
            pattern = (
                inc[1] if inc[1].startswith("/") else os.path.join(os.path.dirname(path), inc[1])
            )
            for sub in sorted(glob.glob(pattern)):
                if found := _pyxis_line(sub, read, depth + 1):
                    return found
    return None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def runtimes_from(
    config: dict[str, str],
    *,
    read: Callable[[str], str | None] = _read,
    exists: Callable[[str], bool] = os.path.exists,
    apptainer_version: str | None = None,
) -> ContainerRuntimes:
    """Pure part of ``detect_container_runtimes``: decide from ``scontrol show config``, the
    files it names (through ``read``/``exists``) and ``apptainer --version`` (None: absent)."""
    found: dict[str, str] = {}
    missing: dict[str, str] = {}
    conf_dir = _conf_dir(config)
    plugstack = _plugstack_path(config, conf_dir)
    where = plugstack and _pyxis_line(plugstack, read)
    if where:
        found["pyxis"] = f"spank_pyxis.so in {where}"
    else:
        missing["pyxis"] = f"no spank_pyxis.so in {plugstack or 'plugstack.conf'}"
    oci = os.path.join(conf_dir, "oci.conf") if conf_dir else None
    if oci and exists(oci):
        found["oci"] = oci
    else:
        missing["oci"] = f"no {oci or 'oci.conf beside slurm.conf'}"
    if apptainer_version:
        found["apptainer"] = apptainer_version.strip().splitlines()[0]
    else:
        missing["apptainer"] = "no apptainer on PATH"
    return ContainerRuntimes(found, missing)


def apptainer_version() -> str | None:
    """``apptainer --version`` (``apptainer version 1.4.5``), None where it does not run."""
    try:
        proc = run_slurm(["apptainer", "--version"], timeout=30, check=False)
    except SlurmError:
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


def detect_container_runtimes() -> ContainerRuntimes:
    """Ask the running cluster (``scontrol show config``, its files, ``apptainer``); raises
    SlurmError when the controller cannot be reached."""
    config = parse_config(run_slurm(["scontrol", "show", "config"], timeout=30).stdout)
    return runtimes_from(config, apptainer_version=apptainer_version())
