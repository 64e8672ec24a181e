"""The HealthCheckProgram wrapper from Python: what it runs and with which environment, found
where it is exported (``snrun site export SITE --format health-check``); the script itself is
rendered by ``site/health_check.py``."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from slurm_supernode.errors import InputError
from slurm_supernode.site.health_check import (
    SYSTEM_PATH,
    WRAPPER_OWNS,
    HealthCheckSetup,
    render_health_check,
)
from slurm_supernode.site.model import Site

# Programs the checks and the drain call, looked up on the exporting PATH: their folders go
# into the wrapper's PATH (slurmd gives it none).
TOOLS = ("scontrol", "nvidia-smi", "npu-smi", "hccn_tool", "dmesg", "logger")
# Variables carried from the exporting environment when set there.
CARRIED = ("SLURM_CONF", "PYTHONPATH")


def _executable(path: str, where: str) -> str:
    if not os.path.isabs(path):
        raise InputError(f"{path} is not an absolute path", where=where,
                         hint="slurmd gives the wrapper no PATH to find it by")  # fmt: skip
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise InputError(f"{path} is not an executable file", where=where)
    return path


def health_check_setup(
    site: Site,
    *,
    python: str | None = None,
    snrun: str | None = None,
    health_args: str = "",
    environ: Mapping[str, str] | None = None,
) -> tuple[HealthCheckSetup, list[str]]:
    """(what the wrapper runs, notes for the admin). ``snrun``: that program; else ``python``
    (default: the one running this export) with ``-m slurm_supernode``."""
    env = os.environ if environ is None else environ
    if python and snrun:
        raise InputError("give --python or --snrun, not both", where="--snrun")
    if snrun:
        command: tuple[str, ...] = (_executable(snrun, "--snrun"),)
    else:
        interpreter = python or os.path.abspath(sys.executable)  # a venv's link, not its target
        command = (_executable(interpreter, "--python"), "-m", "slurm_supernode")
    if not site.source:
        raise InputError("the site has no file to point SNRUN_SITE at", where="FILE",
                         hint="export from a site file or an installed site name")  # fmt: skip
    try:
        args = tuple(shlex.split(health_args))
    except ValueError as exc:
        raise InputError(f"cannot split: {exc}", where="--health-args") from None
    for arg in args:
        if arg.split("=", 1)[0] in WRAPPER_OWNS:
            raise InputError(
                f"{arg.split('=', 1)[0]} is set by the wrapper itself",
                where="--health-args",
                hint="give only check options (--min-free-gb, --path, --prom ...)",
            )
    notes: list[str] = []
    folders = [str(Path(command[0]).parent)]
    search = env.get("PATH", os.defpath)
    for tool in TOOLS:
        found = shutil.which(tool, path=search)
        if found:
            folders.append(str(Path(found).parent))
        elif tool == "scontrol":
            notes.append("scontrol not found on this PATH: the wrapper can drain only where it "
                         "is in " + ":".join(SYSTEM_PATH))  # fmt: skip
    path = tuple(dict.fromkeys([*folders, *SYSTEM_PATH]))
    carried = tuple((name, env[name]) for name in CARRIED if env.get(name))
    for name, value in carried:
        notes.append(f"{name}={value} carried into the wrapper (set where it was exported)")
    setup = HealthCheckSetup(command, str(Path(site.source).resolve()), path, carried, args)
    return setup, notes


def health_check_script(
    site: Site, *, python: str | None = None, snrun: str | None = None, health_args: str = ""
) -> tuple[str, list[str]]:
    """The wrapper's text and the notes (``health_check_setup``'s arguments)."""
    setup, notes = health_check_setup(site, python=python, snrun=snrun, health_args=health_args)
    return render_health_check(setup, site.name), notes
