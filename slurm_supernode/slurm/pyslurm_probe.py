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
import threading
import weakref
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


# The slurm.conf each loaded pyslurm's libslurm reads. libslurm keeps ONE configuration per
# process, read at `import pyslurm` from SLURM_CONF: a process whose SLURM_CONF then names
# another cluster (a test of two clusters, a tool that visits several sites) would otherwise
# ask the first cluster's controller. Keyed by the module: a re-import starts over.
_READS: weakref.WeakKeyDictionary[ModuleType, str] = weakref.WeakKeyDictionary()
_READS_LOCK = threading.Lock()


def read_conf(api: ModuleType, conf: str) -> str | None:
    """Make the loaded libslurm read `conf` (the first call records what the import read);
    a reason in words when this pyslurm cannot (no `slurm_init`/`slurm_fini`)."""
    with _READS_LOCK:
        was = _READS.get(api)
        if was is None:
            _READS[api] = conf  # the import just read SLURM_CONF, which is conf
            return None
        if was == conf:
            return None
        init, fini = getattr(api, "slurm_init", None), getattr(api, "slurm_fini", None)
        if not (callable(init) and callable(fini)):
            return f"this pyslurm reads {was} and cannot re-read slurm.conf (no slurm_init)"
        fini()  # libslurm reads a configuration only once; fini forgets it
        init(conf)
        _READS[api] = conf
    log.debug("pyslurm now reads SLURM_CONF=%s (it read %s)", conf, was)
    return None


def pyslurm_api() -> ModuleType | None:
    """The pyslurm module where it may serve this process's queries, else None (the reason is
    logged once). With `SNRUN_SLURM_BACKEND=pyslurm` a reason is a SlurmError instead. The
    module then asks the cluster SLURM_CONF names now (`read_conf`)."""
    env = os.environ
    conf = env.get("SLURM_CONF")
    found = _probe_once(conf, env.get("SNRUN_SLURM_BACKEND"), env.get("PATH"))
    why_not = found.why_not
    if found.api is not None and conf:
        why_not = read_conf(found.api, conf)
        if why_not is not None:
            log.debug("Slurm queries use the command line: pyslurm skipped: %s", why_not)
    if why_not is None:
        return found.api
    if (env.get("SNRUN_SLURM_BACKEND") or "").strip().lower() == "pyslurm":
        raise SlurmError(
            f"SNRUN_SLURM_BACKEND=pyslurm, but {why_not}",
            kind=SlurmErrorKind.NOT_INSTALLED,
            hint="install a pyslurm built for this Slurm (docs/pyslurm.md) or unset it",
        )
    return None
