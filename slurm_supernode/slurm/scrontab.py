"""The user's scrontab (Slurm's cron: entries run as jobs), read and replaced whole.

`scrontab` is not installed everywhere (Debian 12's Slurm 22.05 packages lack it): callers
check `version.detect_features().has_scrontab` first. Editing is read-modify-write of the
whole table, like crontab; the pure text edits live with their callers.
"""

from __future__ import annotations

import os
import tempfile

from slurm_supernode.errors import SlurmError, SlurmErrorKind
from slurm_supernode.slurm.runner import failure_kind, run_slurm


def read_scrontab() -> str:
    """The current user's scrontab text ("" when the user has none)."""
    proc = run_slurm(["scrontab", "-l"], timeout=30, check=False)
    if proc.returncode == 0:
        return proc.stdout
    if failure_kind(proc) is SlurmErrorKind.NOT_FOUND:  # "no crontab for USER"
        return ""
    raise SlurmError(f"scrontab -l failed: {proc.stderr.strip() or proc.stdout.strip()}")


def write_scrontab(text: str) -> None:
    """Replace the current user's scrontab with `text` (Slurm checks it and may refuse)."""
    fd, path = tempfile.mkstemp(prefix="snrun-scrontab.", suffix=".txt")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        run_slurm(["scrontab", path], timeout=30)
    finally:
        os.unlink(path)
