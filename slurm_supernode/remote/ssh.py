"""The one module that spawns ``ssh``: a command on a cluster's login node, over one shared
connection per destination (OpenSSH's ControlMaster; the first command opens it, the next ones
reuse it for ControlPersist seconds).

``call`` captures (the JSON verbs, the code store); ``stream`` passes the remote output through
as it comes (``logs -f``, ``attach``). ssh's own lines are held back from the terminal and read
by ``failures.py``; the remote command's stderr goes to the user as it is.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from slurm_supernode.remote import failures
from slurm_supernode.remote.command import control_dir, shell_line, ssh_argv
from slurm_supernode.remote.config import Cluster

VERSION_TTL_S = 600  # a checked snrun version is believed this long (per cluster entry)


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: bytes
    stderr: str  # the remote command's (ssh's own lines removed)


@dataclass
class Transport:
    """Commands on one cluster. ``commands`` counts the ssh processes run (round trips)."""

    cluster: Cluster
    controls: Path | None = None
    batch: bool | None = None  # BatchMode: default when stdin is no terminal
    commands: int = 0
    _ready: bool = field(default=False, repr=False)

    def _controls(self) -> Path:
        folder = self.controls or control_dir()
        private_dir(folder)
        return folder

    def _argv(self, line: str | None, *, tty: bool = False, extra: Sequence[str] = ()) -> list[str]:
        batch = self.batch if self.batch is not None else not sys.stdin.isatty()
        return ssh_argv(self.cluster, line, self._controls(), tty=tty, batch=batch, extra=extra)

    def call(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes = b"",
        snrun: bool = True,
        timeout: float | None = None,
    ) -> Result:
        """Run ``argv`` (snrun's, unless ``snrun=False``) there and capture its output; ssh's
        failures raise RemoteError, the remote command's status is returned."""
        line = shell_line(self.cluster, argv, snrun=snrun)
        self.commands += 1
        try:
            proc = subprocess.run(
                self._argv(line), input=stdin, capture_output=True, timeout=timeout, check=False
            )
        except FileNotFoundError:
            raise failures.RemoteError(
                "ssh is not installed here",
                kind=failures.RemoteErrorKind.SSH,
                where=f"cluster {self.cluster.name!r}",
                hint="install the OpenSSH client",
            ) from None
        except subprocess.TimeoutExpired:
            raise failures.RemoteError(
                f"no answer in {timeout:.0f} s",
                kind=failures.RemoteErrorKind.DROPPED,
                where=f"cluster {self.cluster.name!r} ({self.cluster.destination})",
            ) from None
        ssh_lines, theirs = split_stderr(proc.stderr.decode(errors="replace"))
        self._raise_for_ssh(proc.returncode, ssh_lines, started=False)
        return Result(proc.returncode, proc.stdout, theirs)

    def stream(self, argv: Sequence[str], *, tty: bool = False, interactive: bool = False) -> int:
        """Run snrun ``argv`` there, its stdout straight to ours and its stderr as it comes;
        ``interactive``: our stdin goes there too. Its exit code."""
        line = shell_line(self.cluster, argv)
        self.commands += 1
        proc = subprocess.Popen(
            self._argv(line, tty=tty),
            stdin=None if interactive else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert proc.stderr is not None
        errs = _StderrPump(proc.stderr)
        errs.start()
        try:
            code = proc.wait()
        finally:
            _end(proc, errs)
        self._check_ssh(code, errs, started=False)
        return code

    def lines(self, argv: Sequence[str]) -> Iterator[bytes]:
        """Run snrun ``argv`` there and yield its stdout lines as they come (the command is
        ended when the reader stops early). A non-zero exit raises RemoteError (FAILED; its
        stderr was shown as it came); ssh's failures raise theirs (DROPPED once a line came)."""
        line = shell_line(self.cluster, argv)
        self.commands += 1
        proc = subprocess.Popen(
            self._argv(line),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        errs = _StderrPump(proc.stderr)
        errs.start()
        started = False
        try:
            for raw in iter(proc.stdout.readline, b""):
                started = True
                yield raw
            code = proc.wait()
        finally:
            _end(proc, errs)
        self._check_ssh(code, errs, started=started)
        if code != 0:
            raise failures.RemoteError(
                f"`snrun {' '.join(argv)}` exited {code} on the login node",
                kind=failures.RemoteErrorKind.FAILED,
                where=f"cluster {self.cluster.name!r}",
                exit_code=code if code < 128 else 1,
            )

    def _check_ssh(self, code: int, errs: _StderrPump, *, started: bool) -> None:
        """ssh's exit 255 in words (a remote snrun never exits 255; an ssh whose connection
        ended says so in its own lines, or says nothing at all)."""
        if code != failures.SSH_FAILED or (errs.theirs_seen and not errs.ssh_lines):
            return
        said = errs.ssh_lines or "the connection ended without a word"
        raise failures.ssh_failure(
            self.cluster.name, self.cluster.destination, said, started=started or errs.theirs_seen
        )

    def _raise_for_ssh(self, code: int, ssh_lines: str, *, started: bool) -> None:
        if code == failures.SSH_FAILED and ssh_lines:
            raise failures.ssh_failure(
                self.cluster.name, self.cluster.destination, ssh_lines, started=started
            )

    def close(self) -> None:
        """End the shared connection now (`snrun clusters --close`; tests)."""
        subprocess.run(self._argv(None, extra=("-O", "exit")), capture_output=True, check=False)

    def master_pid(self) -> int | None:
        """The pid of the shared connection's ssh, if one is open."""
        proc = subprocess.run(
            self._argv(None, extra=("-O", "check")), capture_output=True, text=True, check=False
        )
        found = [w for w in proc.stderr.replace(")", " ").split() if w.startswith("(pid=")]
        return int(found[0][5:]) if found and proc.returncode == 0 else None

    def ensure_snrun(self, needed: str) -> str:
        """The login node's snrun version, checked against ``needed`` (once per
        VERSION_TTL_S per cluster entry: the answer is kept beside the control sockets)."""
        if self._ready:
            return needed
        stamp = self._controls() / f"{_entry_key(self.cluster)}.snrun"
        try:
            if time.time() - stamp.stat().st_mtime < VERSION_TTL_S:
                found = stamp.read_text().strip()
                if _older(found, needed) is False:
                    self._ready = True
                    return found
        except OSError:
            pass
        res = self.call(["--version"])
        found = self.version_of(res, needed)
        stamp.write_text(found + "\n")
        self._ready = True
        return found

    def version_of(self, res: Result, needed: str) -> str:
        """snrun's version from ``snrun --version``'s result, or the failure in words."""
        text = res.stdout.decode(errors="replace").strip()
        command = " ".join(self.cluster.snrun)
        if res.returncode == failures.NOT_FOUND or "No module named" in res.stderr:
            raise failures.no_snrun(self.cluster.name, command, needed, res.stderr)
        words = text.split()
        if res.returncode != 0 or len(words) != 2 or words[0] != "snrun":
            raise failures.remote_failure(
                self.cluster.name, f"{command} --version", res.returncode, res.stderr or text
            )
        if _older(words[1], needed) is not False:
            raise failures.old_snrun(self.cluster.name, words[1], needed)
        return words[1]


def _end(proc: subprocess.Popen[bytes], errs: _StderrPump) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    errs.join(5)


def split_stderr(text: str) -> tuple[str, str]:
    """ssh's own lines and the remote command's, apart."""
    ours: list[str] = []
    theirs: list[str] = []
    for line in text.splitlines(keepends=True):
        (ours if failures.SSH_LINE.match(line) else theirs).append(line)
    return "".join(ours), "".join(theirs)


class _StderrPump(threading.Thread):
    """Copies the remote stderr to ours line by line, holding back ssh's own lines."""

    def __init__(self, pipe: IO[bytes]):
        super().__init__(daemon=True)
        self.pipe = pipe
        self.ssh_lines = ""
        self.tail: list[str] = []
        self.theirs_seen = False

    def run(self) -> None:
        for raw in iter(self.pipe.readline, b""):
            line = raw.decode(errors="replace")
            if failures.SSH_LINE.match(line):
                self.ssh_lines += line
                continue
            self.theirs_seen = True
            self.tail = [*self.tail[-20:], line]
            sys.stderr.write(line)
            sys.stderr.flush()


def private_dir(folder: Path) -> None:
    """Make ``folder`` (mode 0700) or refuse one someone else could write to: a control
    socket there would let them run commands as us."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = folder.stat()
    if st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
        raise failures.RemoteError(
            f"{folder} is not private (owner {st.st_uid}, mode {stat.S_IMODE(st.st_mode):o})",
            kind=failures.RemoteErrorKind.SSH,
            where="SSH control sockets",
            hint=f"chmod 700 {folder}, or set SNRUN_SSH_CONTROL_DIR",
        )


def _entry_key(cluster: Cluster) -> str:
    text = repr(
        (cluster.destination, cluster.snrun, cluster.ssh_options, cluster.path, cluster.env)
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _older(found: str, needed: str) -> bool | None:
    """Whether version ``found`` is older than ``needed`` (None: not a version)."""
    import re

    have, want = (re.match(r"\d+(\.\d+)*", v) for v in (found, needed))
    if have is None or want is None:
        return None
    return tuple(map(int, have[0].split("."))) < tuple(map(int, want[0].split(".")))
