"""The command lines of the transport (pure): what ``ssh`` is run with, and the one shell line
the login node runs. Everything that reaches the remote shell is quoted (``shlex``)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

from slurm_supernode.remote.config import Cluster
from slurm_supernode.user_settings import SnrunSettings

CONTROL_PERSIST_S = 600  # the shared connection stays this long after its last command
CONNECT_TIMEOUT_S = 15
# a connection that stops answering is found within ALIVE_INTERVAL_S * ALIVE_COUNT
ALIVE_INTERVAL_S = 5
ALIVE_COUNT = 3


def remote_env(cluster: Cluster) -> list[tuple[str, str]]:
    """The variables snrun gets on the cluster: the site and jobs dir, the cluster's own, and
    SNRUN_CLUSTER emptied (the login node runs its verbs there, not on yet another cluster)."""
    env = [("SNRUN_CLUSTER", "")]
    if cluster.site:
        env.append(("SNRUN_SITE", cluster.site))
    if cluster.jobs_dir:
        env.append(("SNRUN_JOBS_DIR", cluster.jobs_dir))
    return env + list(cluster.env)


def shell_line(cluster: Cluster, argv: Sequence[str], *, snrun: bool = True) -> str:
    """The line the login node's shell runs: ``exec env VAR=... [PATH=...:"$PATH"] snrun ARGV``.

    ``path`` entries go first on the remote PATH (the one unquoted word is ``"$PATH"``, the
    remote's own); every other word is quoted. ``snrun=False`` runs ``argv`` itself.
    """
    words = ["exec", "env"]
    words += [f"{k}={shlex.quote(v)}" for k, v in remote_env(cluster)]
    if cluster.path:
        words.append("PATH=" + shlex.quote(":".join(cluster.path)) + ':"$PATH"')
    command = [*cluster.snrun, *argv] if snrun else list(argv)
    return " ".join(words) + " " + shlex.join(command)


def control_dir(settings: SnrunSettings | None = None) -> Path:
    """The private folder of the control sockets: ``$SNRUN_SSH_CONTROL_DIR``, else
    ``$XDG_RUNTIME_DIR/snrun-ssh``, else ``~/.cache/snrun/ssh``."""
    settings = settings or SnrunSettings.from_environ()
    if settings.ssh_control_dir:
        return Path(settings.ssh_control_dir).expanduser()
    if settings.runtime_dir:
        return Path(settings.runtime_dir, "snrun-ssh")
    return Path(os.path.expanduser("~"), ".cache", "snrun", "ssh")


def ssh_argv(
    cluster: Cluster,
    line: str | None,
    controls: Path,
    *,
    tty: bool = False,
    batch: bool = True,
    extra: Sequence[str] = (),
) -> list[str]:
    """``ssh`` sharing one connection per destination (ControlMaster: the socket is named by
    ssh's hash of host, port and user, ``%C``), with keep-alives so a dropped connection is
    seen, then the cluster's own options; ``--`` before the destination."""
    argv = [
        "ssh",
        "-o", "ControlMaster=auto",
        "-o", f"ControlPath={controls}/%C",
        "-o", f"ControlPersist={CONTROL_PERSIST_S}",
        "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}",
        "-o", f"ServerAliveInterval={ALIVE_INTERVAL_S}",
        "-o", f"ServerAliveCountMax={ALIVE_COUNT}",
        "-o", "LogLevel=ERROR",
    ]  # fmt: skip
    if batch:
        argv += ["-o", "BatchMode=yes"]  # no prompt nobody answers: a refusal is said at once
    argv += ["-tt"] if tty else ["-T"]
    argv += [*cluster.ssh_options, *extra, "--", cluster.destination]
    return argv if line is None else [*argv, line]
