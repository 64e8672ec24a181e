"""Run one Slurm command and turn every way it can fail into a one-line SlurmError.

This is the single place where a Slurm binary is executed: the rest of the package calls
`run_slurm`, so missing binaries, a dead controller, hangs and non-zero exits are reported the
same way everywhere, with the command name, Slurm's own message and a hint.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence

from slurm_supernode.errors import SlurmError, SlurmErrorKind
from slurm_supernode.slurm.conf import missing_conf

# Package that provides each client command on Debian/Ubuntu (for the "not installed" hint).
_CLIENT_PACKAGE = "slurm-client"

# The one place that reads Slurm's message text: fragments of its stderr (compared without
# case) and the kind of failure each means. First match wins.
_STDERR_KINDS: tuple[tuple[str, SlurmErrorKind], ...] = (
    ("unable to contact slurm controller", SlurmErrorKind.UNREACHABLE),
    ("connection refused", SlurmErrorKind.UNREACHABLE),
    ("zero bytes were transmitted or received", SlurmErrorKind.UNREACHABLE),
    ("socket timed out on send/recv operation", SlurmErrorKind.TIMEOUT),
    ("temporarily unavailable", SlurmErrorKind.BUSY),
    ("temporarily unable to accept job", SlurmErrorKind.BUSY),
    ("could not establish a configuration source", SlurmErrorKind.NO_CONFIG),
    ("unable to process configuration file", SlurmErrorKind.NO_CONFIG),
    ("already completing or completed", SlurmErrorKind.ENDED),
    ("invalid job id", SlurmErrorKind.NOT_FOUND),
    ("invalid node name", SlurmErrorKind.NOT_FOUND),
    ("no jobs in the system", SlurmErrorKind.NOT_FOUND),
    ("no crontab for", SlurmErrorKind.NOT_FOUND),
)


def stderr_kind(text: str) -> SlurmErrorKind:
    """What a failed command's output means; REFUSED when nothing more specific matches."""
    low = text.lower()
    return next((kind for frag, kind in _STDERR_KINDS if frag in low), SlurmErrorKind.REFUSED)


def failure_kind(proc: subprocess.CompletedProcess[str]) -> SlurmErrorKind:
    """Kind of a completed command's failure (for ``check=False`` callers)."""
    return stderr_kind((proc.stderr or "") + "\n" + (proc.stdout or ""))


_CONTROLLER_HINT = (
    "is slurmctld running? check 'scontrol ping'; for the local test cluster run "
    "'make cluster-up' and export SLURM_CONF from $SNRUN_MC_DIR/env.sh"
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
    full_env = _environment(name, env)
    proc = _run(cmd, input=input, timeout=timeout, cwd=cwd, env=full_env)
    if proc.returncode != 0:
        _raise_failure(name, proc, check)
    return proc


def _environment(name: str, env: Mapping[str, str] | None) -> dict[str, str] | None:
    """The command's environment (None: this process's), with a SLURM_CONF that exists."""
    full_env = None
    if env is not None:
        full_env = dict(os.environ)
        full_env.update(env)
    conf = missing_conf(full_env)
    if conf:
        # Slurm clients would retry for 60 s before failing; fail at once instead.
        raise SlurmError(
            f"{name}: SLURM_CONF points to a missing file: {conf}",
            kind=SlurmErrorKind.NO_CONFIG,
            hint="unset SLURM_CONF or boot the cluster it belongs to ('make cluster-up')",
        )
    return full_env


def _run(
    cmd: list[str],
    *,
    input: str | None,
    timeout: float,
    cwd: str | os.PathLike[str] | None,
    env: dict[str, str] | None,
) -> subprocess.CompletedProcess[str]:
    """The command's completed process; a missing binary or a timeout is a SlurmError."""
    name = cmd[0]
    try:
        return subprocess.run(
            cmd,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            env=env,
            check=False,
        )
    except FileNotFoundError:
        raise SlurmError(
            f"{name} not found: Slurm is not installed",
            kind=SlurmErrorKind.NOT_INSTALLED,
            hint=f"apt-get install {_CLIENT_PACKAGE}",
        ) from None
    except subprocess.TimeoutExpired:
        raise SlurmError(
            f"{name} did not answer within {timeout:g} s",
            kind=SlurmErrorKind.TIMEOUT,
            hint=_CONTROLLER_HINT,
        ) from None
    except OSError as exc:
        raise SlurmError(
            f"{name} could not be run: {exc.strerror or exc}", kind=SlurmErrorKind.NOT_INSTALLED
        ) from None


def _raise_failure(name: str, proc: subprocess.CompletedProcess[str], check: bool) -> None:
    """A non-zero exit: an unreachable controller or a missing configuration always raise;
    any other failure only with ``check``."""
    stderr = proc.stderr or ""
    kind = failure_kind(proc)
    if kind in (SlurmErrorKind.UNREACHABLE, SlurmErrorKind.TIMEOUT):
        raise SlurmError(
            f"{name}: cannot reach the Slurm controller: {_one_line(stderr)}",
            kind=kind,
            hint=_CONTROLLER_HINT,
        )
    if kind is SlurmErrorKind.NO_CONFIG:
        raise SlurmError(
            f"{name}: no Slurm configuration found: {_one_line(stderr)}",
            kind=kind,
            hint="set SLURM_CONF to the cluster's slurm.conf",
        )
    if check:
        detail = _one_line(stderr) or _one_line(proc.stdout) or "no message"
        raise SlurmError(f"{name} failed (exit {proc.returncode}): {detail}", kind=kind)
