"""A real OpenSSH server for the remote tests: Debian's sshd in the foreground (``-D -e``) on a
free loopback port, its own host key and authorized_keys in a temp folder, keys only; stopped
by ``stop()`` (the fixtures' teardown). The "login node" is this machine."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def keygen(path: Path) -> Path:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path)],
        check=True,
    )
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Sshd:
    folder: Path
    port: int
    host_key: Path
    proc: subprocess.Popen[bytes]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def known_hosts_line(self) -> str:
        pub = Path(f"{self.host_key}.pub").read_text().split()
        return f"[127.0.0.1]:{self.port} {pub[0]} {pub[1]}\n"


def start_sshd(
    folder: Path,
    authorized: list[Path],
    *,
    set_env: dict[str, str] | None = None,
    timeout: float = 30,
) -> Sshd:
    """sshd on 127.0.0.1:<free port> letting the keys ``authorized`` in (as this user)."""
    folder.mkdir(parents=True, exist_ok=True)
    host_key = folder / "host_ed25519"
    if not host_key.exists():
        keygen(host_key)
    auth = folder / "authorized_keys"
    auth.write_text("".join(Path(f"{k}.pub").read_text() for k in authorized))
    os.chmod(auth, 0o600)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation folder
    for _ in range(5):
        port = _free_port()
        conf = folder / "sshd_config"
        lines = [
            f"Port {port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {host_key}",
            f"AuthorizedKeysFile {auth}",
            f"PidFile {folder}/sshd.pid",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes",
            "PermitRootLogin prohibit-password",
            "UsePAM no",
            "StrictModes no",
            "AllowTcpForwarding yes",
            "PrintMotd no",
            "LogLevel INFO",
            "MaxSessions 50",
            "MaxStartups 50",
        ]
        if set_env:
            lines.append("SetEnv " + " ".join(f"{k}={v}" for k, v in set_env.items()))
        conf.write_text("\n".join(lines) + "\n")
        proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(conf)], stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
        if _listening(proc, port, timeout):
            return Sshd(folder, port, host_key, proc)
        proc.kill()
        proc.wait()
    raise RuntimeError(f"sshd did not start: see {folder}")


def _listening(proc: subprocess.Popen[bytes], port: int, timeout: float) -> bool:
    """sshd says 'Server listening on 127.0.0.1 port N.' once it accepts; its later log lines
    are drained by a thread so it never blocks on a full pipe."""
    import threading

    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    ok = False
    for raw in iter(proc.stderr.readline, b""):
        if b"Server listening" in raw and f"port {port}".encode() in raw:
            ok = True
            break
        if b"Address already in use" in raw or time.monotonic() > deadline:
            break
    if ok:
        stderr = proc.stderr
        threading.Thread(
            target=lambda: [None for _ in iter(stderr.readline, b"")], daemon=True
        ).start()
    return ok


def close_masters(controls: Path) -> None:
    """End every shared connection whose socket is in ``controls`` (ControlPersist would keep
    the masters, and the server's session processes, for minutes after the tests)."""
    for sock in controls.glob("*"):
        if sock.is_socket():
            subprocess.run(
                ["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "unused"],
                capture_output=True,
                timeout=30,
                check=False,
            )
