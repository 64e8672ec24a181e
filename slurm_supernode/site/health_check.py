"""The HealthCheckProgram wrapper (``snrun site export SITE --format health-check``), rendered.

Why a generated wrapper: slurmd runs HealthCheckProgram as root, with no arguments and almost
no environment (only ``PWD`` and ``SLURMD_NODENAME`` were set on 24.11), and ignores its exit
status. So the wrapper names everything by absolute path (the python or snrun found when it
was exported), sets the environment snrun needs (``SNRUN_SITE``, a ``PATH`` that finds
scontrol and the vendor tools, ``SLURM_CONF`` / ``PYTHONPATH`` where the export had them) and
makes both calls, ``--drain`` and then ``--resume-ok`` when the node passes (the two flags are
exclusive on one command line). Everything rendered into the script is quoted.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

# Options of `snrun health` the wrapper sets itself or that do not belong in a periodic check.
WRAPPER_OWNS = ("--drain", "--resume-ok", "--json", "--node", "--site")
SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


@dataclass(frozen=True, slots=True)
class HealthCheckSetup:
    """What the wrapper runs, and with which environment (all paths absolute)."""

    command: tuple[str, ...]  # ("/usr/bin/python3", "-m", "slurm_supernode") or ("/x/snrun",)
    site_file: str  # SNRUN_SITE
    path: tuple[str, ...]  # PATH, in order
    env: tuple[tuple[str, str], ...] = ()  # more variables (SLURM_CONF, PYTHONPATH, ...)
    health_args: tuple[str, ...] = ()  # options of both calls (--min-free-gb 20, --prom F...)


def render_health_check(setup: HealthCheckSetup, site_name: str) -> str:
    q = shlex.quote
    health = " ".join(q(a) for a in (*setup.command, "health", *setup.health_args))
    variables = [("PATH", ":".join(setup.path)), ("SNRUN_SITE", setup.site_file), *setup.env]
    lines = [
        "#!/bin/sh",
        f"# snrun health check of site {site_name} for slurmd (HealthCheckProgram), written by",
        "# `snrun site export --format health-check`: re-export it after moving python or snrun.",
        "# slurmd runs it as root with almost no environment and ignores its exit status, so",
        "# everything is named by absolute path here, and the drain is the signal: a critical",
        '# node is drained with reason "snrun: <check>: ..."; a node that passes again is',
        "# resumed only if snrun drained it (never an admin's or another tool's drain).",
        *(f"{name}={q(value)}" for name, value in variables),
        "export " + " ".join(name for name, _ in variables),
        "",
        f"{health} --drain >/dev/null 2>&1",
        "rc=$?",
        "case $rc in",
        f"  0 | 1) {health} --resume-ok >/dev/null 2>&1 ;;  # ok or warning: lift snrun's drain",
        "  2 | 3) ;;  # critical: drained (or already drained); unknown: nothing changes",
        "  *) command -v logger >/dev/null 2>&1 &&",
        '       logger -t snrun-health "health check on ${SLURMD_NODENAME:-$(hostname)} could'
        ' not run (exit $rc): re-export the wrapper (snrun site export --format health-check)"'
        " ;;",
        "esac",
        "exit 0  # slurmd ignores the status; the drain is what it acts on",
        "",
    ]
    return "\n".join(lines)
