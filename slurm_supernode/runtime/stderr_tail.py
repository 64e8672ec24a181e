"""torchrun's stderr passed through as it comes, its tail kept: the failure report names the
failed ranks there.
"""

from __future__ import annotations

import os
from collections.abc import Sequence


class StderrTail:
    """Copy a child's stderr through to ours as it comes, keeping the last ``keep`` bytes (torchrun
    prints which ranks failed there). A thread, so the child never blocks on a full pipe."""

    def __init__(self, fd: int, keep: int = 256 * 1024, out_fd: int = 2) -> None:
        import threading

        self._fd, self._keep, self._out = fd, keep, out_fd
        self._buf = bytearray()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        writable = True
        while True:
            try:
                chunk = os.read(self._fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            view = memoryview(chunk)
            while writable and view:
                try:
                    view = view[os.write(self._out, view) :]
                except OSError:
                    writable = False  # our stderr is gone: keep draining the child's
            self._buf += chunk
            if len(self._buf) > 2 * self._keep:
                del self._buf[: -self._keep]

    def holds(self, markers: Sequence[bytes]) -> bool:
        """Has the child printed one of ``markers`` (in what is kept)?"""
        kept = bytes(self._buf)
        return any(marker in kept for marker in markers)

    def text(self, timeout: float = 2.0) -> str:
        """What was kept, once the pipe closed (or after ``timeout``: a worker that outlives
        torchrun may hold it open)."""
        self._thread.join(timeout)
        return bytes(self._buf[-self._keep :]).decode("utf-8", errors="replace")
