"""May this process ask Slurm through pyslurm (the C API) instead of the command line?

pyslurm builds against one Slurm major.minor (PyPI's 25.11.x serves Slurm 25.11 only) and its
import ends the process when no configuration is found (`import pyslurm` without `SLURM_CONF`
looks for DNS SRV records and exits 1). So it is used only where all of this holds, checked
in order and BEFORE the import: the choice allows it (`SNRUN_SLURM_BACKEND`: `auto`, the
default, `pyslurm` or `cli`); `SLURM_CONF` names an existing file; pyslurm is installed; its
release's major.minor is the running Slurm's (`sinfo --version`, the clients the command-line
path uses); and the import succeeds. Otherwise the command-line path answers and the reason is
logged (`snrun --debug` shows it). `SNRUN_SLURM_BACKEND=pyslurm` turns a reason into an error.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType

from slurm_supernode.errors import SlurmError, SlurmErrorKind

log = logging.getLogger(__name__)

CHOICES = ("auto", "pyslurm", "cli")


@dataclass(frozen=True)
class PyslurmProbe:
    """The outcome: `api` is the imported pyslurm module, or None with `why_not` in words."""

    api: ModuleType | None
    why_not: str | None = None
    version: str | None = None  # pyslurm's release, when installed


def major_minor(version: str) -> tuple[int, int] | None:
    """`25.11.2` -> (25, 11); None when it does not start with two numbers."""
    parts = version.strip().split(".")
    if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    return int(parts[0]), int(parts[1])


def installed_pyslurm() -> str | None:
    """pyslurm's release without importing it (the import may end the process); None if absent."""
    if importlib.util.find_spec("pyslurm") is None:
        return None
    try:
        return importlib.metadata.version("pyslurm")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def running_slurm() -> tuple[int, int]:
    """The running Slurm's major.minor, from the clients the command-line path uses."""
    from slurm_supernode.slurm.version import slurm_version

    version = slurm_version()
    return version.major, version.minor


def probe(
    env: Mapping[str, str],
    *,
    installed: Callable[[], str | None] = installed_pyslurm,
    running: Callable[[], tuple[int, int]] = running_slurm,
    load: Callable[[str], ModuleType] = importlib.import_module,
) -> PyslurmProbe:
    """Decide (pure apart from the three callables, which tests replace)."""
    choice = (env.get("SNRUN_SLURM_BACKEND") or "auto").strip().lower()
    if choice not in CHOICES:
        raise SlurmError(
            f"SNRUN_SLURM_BACKEND={choice!r} is not one of {', '.join(CHOICES)}",
            kind=SlurmErrorKind.NO_CONFIG,
            hint="unset it (auto: pyslurm where it matches the running Slurm)",
        )
    if choice == "cli":
        return PyslurmProbe(None, "SNRUN_SLURM_BACKEND=cli")
    conf = env.get("SLURM_CONF")
    if not conf:
        return PyslurmProbe(None, "SLURM_CONF is not set (importing pyslurm would end the process)")
    if not os.path.isfile(conf):
        return PyslurmProbe(None, f"SLURM_CONF={conf} is not a file")
    version = installed()
    if version is None:
        return PyslurmProbe(None, "pyslurm is not installed")
    want = major_minor(version)
    try:
        have = running()
    except SlurmError as exc:
        return PyslurmProbe(None, f"the running Slurm's version is unknown: {exc}", version)
    if want != have:
        return PyslurmProbe(
            None,
            f"pyslurm {version} serves Slurm {want[0]}.{want[1]:02d} only, this is"
            f" {have[0]}.{have[1]:02d}"
            if want
            else f"pyslurm {version} names no Slurm release",
            version,
        )
    try:
        api = load("pyslurm")
    except Exception as exc:  # ImportError, or pyslurm's own check of the library it finds
        return PyslurmProbe(None, f"import pyslurm failed: {exc}", version)
    return PyslurmProbe(api, None, version)


@lru_cache(maxsize=8)
def _probe_once(conf: str | None, choice: str | None, path: str | None) -> PyslurmProbe:
    """One probe per configuration, PATH (the clients) and choice, for the process's life:
    the import and the version check are paid once, not per query."""
    env = {k: v for k, v in (("SLURM_CONF", conf), ("SNRUN_SLURM_BACKEND", choice)) if v}
    found = probe(env)
    if found.api is not None:
        log.debug("Slurm queries go through pyslurm %s (SLURM_CONF=%s)", found.version, conf)
    else:
        log.debug("Slurm queries use the command line: pyslurm skipped: %s", found.why_not)
    return found


def pyslurm_api() -> ModuleType | None:
    """The pyslurm module where it may serve this process's queries, else None (the reason is
    logged once). With `SNRUN_SLURM_BACKEND=pyslurm` a reason is a SlurmError instead."""
    env = os.environ
    found = _probe_once(env.get("SLURM_CONF"), env.get("SNRUN_SLURM_BACKEND"), env.get("PATH"))
    if found.api is None and (env.get("SNRUN_SLURM_BACKEND") or "").strip().lower() == "pyslurm":
        raise SlurmError(
            f"SNRUN_SLURM_BACKEND=pyslurm, but {found.why_not}",
            kind=SlurmErrorKind.NOT_INSTALLED,
            hint="install a pyslurm built for this Slurm (docs/pyslurm.md) or unset it",
        )
    return found.api
