"""Waiting on a condition the system reports, never on a guessed sleep: poll until it holds or
a generous deadline (a loaded machine is slow, not wrong) passes."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(pred: Callable[[], object], timeout: float = 60.0, poll: float = 0.05) -> bool:
    """True as soon as ``pred()`` is true; False once ``timeout`` seconds have passed."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(poll)
    return False
