"""Why a command on a cluster failed, said in words: the one reader of ssh's message text.

ssh exits 255 for its own failures (the remote command's status otherwise); its message tells
which: the host cannot be reached, the key was refused, the host key does not match, or an open
connection dropped. A shell that cannot find snrun exits 127.
"""

from __future__ import annotations

import enum
import re

from slurm_supernode.errors import SnrunError

SSH_FAILED = 255
NOT_FOUND = 127
_TRIM = 400  # characters of a remote stderr kept in a message


class RemoteErrorKind(enum.Enum):
    UNREACHABLE = "unreachable"
    AUTH = "authentication refused"
    HOST_KEY = "host key not accepted"
    DROPPED = "connection dropped"
    SSH = "ssh failed"
    NO_SNRUN = "no snrun"
    OLD_SNRUN = "older snrun"
    FAILED = "remote command failed"
    UPLOAD = "code upload failed"


class RemoteError(SnrunError):
    """A command on a cluster could not be run or failed; ``kind`` says which."""

    def __init__(
        self,
        message: str,
        *,
        kind: RemoteErrorKind,
        where: str | None = None,
        hint: str | None = None,
        exit_code: int = 1,
    ):
        super().__init__(message, where=where, hint=hint)
        self.kind = kind
        self.exit_code = exit_code


# ssh's lines (not the remote command's): held back from the user's terminal, read here
SSH_LINE = re.compile(
    r"^(ssh: |ssh_|kex_|mux_|ControlSocket|Connection (closed|reset|timed out|refused)|"
    r"\S+: Permission denied|Permission denied|Host key verification|Could not resolve|"
    r"Bad owner|Load key|"
    r"client_loop|Timeout, server|Received disconnect|Disconnected from|Warning: Permanently|"
    r"channel \d+:|Control socket|muxclient|banner exchange|Connection to \S+ closed|"
    r"@@@@|The authenticity|Shared connection to)"
)
_UNREACHABLE = re.compile(
    r"Could not resolve hostname|Connection refused|Connection timed out|No route to host|"
    r"Network is unreachable|Name or service not known|banner exchange|"
    r"kex_exchange_identification|Temporary failure in name resolution|Operation timed out"
)
_AUTH = re.compile(r"Permission denied|Too many authentication failures|Authentication failed")
_HOST_KEY = re.compile(r"Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED")
_DROPPED = re.compile(
    r"client_loop: send disconnect|Connection reset|Broken pipe|Timeout, server .* not "
    r"responding|Connection to \S+ closed by remote host|mux_client_read|read header failed|"
    r"Connection closed by|Received disconnect|Shared connection to \S+ closed"
)


def trim(text: str, limit: int = _TRIM) -> str:
    """A remote message on one line, its last ``limit`` characters (where the error is)."""
    one = " | ".join(line.strip() for line in text.strip().splitlines() if line.strip())
    return one if len(one) <= limit else "..." + one[-limit:]


def ssh_failure(name: str, destination: str, stderr: str, *, started: bool) -> RemoteError:
    """ssh's exit 255 in words. ``started``: the remote command had begun (then a lost
    connection is a drop, not an unreachable host)."""
    where = f"cluster {name!r} ({destination})"
    said = trim(stderr) or "no message"
    if _HOST_KEY.search(stderr):
        return RemoteError(
            f"the login node's host key is not the one known: {said}",
            kind=RemoteErrorKind.HOST_KEY,
            where=where,
            hint="check ~/.ssh/known_hosts with `ssh " + destination + "`",
        )
    if _AUTH.search(stderr):
        return RemoteError(
            f"authentication refused: {said}",
            kind=RemoteErrorKind.AUTH,
            where=where,
            hint=f"`ssh {destination}` must log in without a prompt (a key, ssh-agent)",
        )
    if started or (_DROPPED.search(stderr) and not _UNREACHABLE.search(stderr)):
        return RemoteError(
            f"connection dropped: {said}",
            kind=RemoteErrorKind.DROPPED,
            where=where,
            hint="run it again; `snrun logs -f` reconnects by itself",
        )
    if _UNREACHABLE.search(stderr):
        return RemoteError(
            f"host unreachable: {said}",
            kind=RemoteErrorKind.UNREACHABLE,
            where=where,
            hint=f"check `ssh {destination}` works from here (VPN, host name, port)",
        )
    return RemoteError(f"ssh failed: {said}", kind=RemoteErrorKind.SSH, where=where)


def remote_failure(name: str, argv_text: str, code: int, stderr: str) -> RemoteError:
    """A command that ran on the cluster and failed: its stderr, trimmed, and its status."""
    return RemoteError(
        f"`{argv_text}` exited {code} on the login node: {trim(stderr) or 'no message'}",
        kind=RemoteErrorKind.FAILED,
        where=f"cluster {name!r}",
        exit_code=code if code < 128 else 1,
    )


def no_snrun(name: str, command: str, needed: str, stderr: str) -> RemoteError:
    return RemoteError(
        f"no snrun on the login node: `{command}` not found ({trim(stderr, 160)}); snrun >= "
        f"{needed} is needed there",
        kind=RemoteErrorKind.NO_SNRUN,
        where=f"cluster {name!r}",
        hint="install slurm-supernode on the cluster, or set `snrun:` (and `path:`) in "
        "clusters.yaml",
    )


def old_snrun(name: str, found: str, needed: str) -> RemoteError:
    return RemoteError(
        f"the login node has snrun {found}; snrun >= {needed} is needed there",
        kind=RemoteErrorKind.OLD_SNRUN,
        where=f"cluster {name!r}",
        hint="upgrade slurm-supernode on the cluster (or point `snrun:` in clusters.yaml at a "
        "newer one)",
    )
