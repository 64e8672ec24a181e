"""Run one Slurm command and turn every way it can fail into a one-line SlurmError.

This is the single place where a Slurm binary is executed: the rest of the package calls
`run_slurm`, so missing binaries, a dead controller, hangs and non-zero exits are reported the
same way everywhere, with the command name, Slurm's own message and a hint.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence

from slurm_supernode.errors import SlurmError

# Package that provides each client command on Debian/Ubuntu (for the "not installed" hint).
_CLIENT_PACKAGE = "slurm-client"

# stderr fragments meaning "the controller is not reachable", not "your request is wrong".
_CONTROLLER_DOWN = (
    "Unable to contact slurm controller",
    "Connection refused",
    "Socket timed out on send/recv operation",
    "Zero Bytes were transmitted or received",
)
_CONTROLLER_HINT = (
    "is slurmctld running? check 'scontrol ping'; for the local test cluster run "
    "'make cluster-up' and export SLURM_CONF from $SNRUN_MC_DIR/env.sh"
)
_NO_CONFIG = (
    "Could not establish a configuration source",
    "Unable to process configuration file",
)


def _one_line(text: str, limit: int = 400) -> str:
    """Slurm's stderr squeezed to one line: the error lines, without blank noise."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower() or "fatal" in ln.lower()]
    joined = "; ".join(errors or lines)
    return joined if len(joined) <= limit else joined[: limit - 3] + "..."


def run_slurm(
    cmd: Sequence[str],
    *,
    input: str | None = None,
    timeout: float = 60,
    check: bool = True,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a Slurm client command and return its completed process (text mode).

    `env` adds to (not replaces) the current environment. With `check=True` a non-zero exit
    raises SlurmError naming the command with its stderr; with `check=False` the caller reads
    `returncode`/`stderr` itself. A missing binary, a missing config file, an unreachable
    controller and a timeout always raise SlurmError, whatever `check` says.
    """
    cmd = [str(c) for c in cmd]
    name = cmd[0]
    full_env = None
    if env is not None:
        full_env = dict(os.environ)
        full_env.update(env)
    conf = (full_env or os.environ).get("SLURM_CONF")
    if conf and not os.path.exists(conf):
        # Slurm clients would retry for 60 s before failing; fail at once instead.
        raise SlurmError(
            f"{name}: SLURM_CONF points to a missing file: {conf}",
            hint="unset SLURM_CONF or boot the cluster it belongs to ('make cluster-up')",
        )
    try:
        proc = subprocess.run(
            cmd,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            env=full_env,
            check=False,
        )
    except FileNotFoundError:
        raise SlurmError(
            f"{name} not found: Slurm is not installed",
            hint=f"apt-get install {_CLIENT_PACKAGE}",
        ) from None
    except subprocess.TimeoutExpired:
        raise SlurmError(
            f"{name} did not answer within {timeout:g} s", hint=_CONTROLLER_HINT
        ) from None
    except OSError as exc:
        raise SlurmError(f"{name} could not be run: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        stderr = proc.stderr or ""
        if any(s in stderr for s in _CONTROLLER_DOWN):
            raise SlurmError(
                f"{name}: cannot reach the Slurm controller: {_one_line(stderr)}",
                hint=_CONTROLLER_HINT,
            )
        if any(s in stderr for s in _NO_CONFIG):
            raise SlurmError(
                f"{name}: no Slurm configuration found: {_one_line(stderr)}",
                hint="set SLURM_CONF to the cluster's slurm.conf",
            )
        if check:
            detail = _one_line(stderr) or _one_line(proc.stdout) or "no message"
            raise SlurmError(f"{name} failed (exit {proc.returncode}): {detail}")
    return proc
