"""User-facing error families.

Each carries where the problem is (``file:line:col`` or an option) and a hint; the CLI prints
``snrun: error: ...`` and exits with ``exit_code`` (2 bad input, 1 failed operation).
"""

from __future__ import annotations

import enum
from typing import NamedTuple


class SnrunError(Exception):
    """Base of every error the CLI reports as one line without a traceback."""

    exit_code = 1

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint

    def __str__(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


class InputError(SnrunError):
    """Bad input from the user: an option, a file, a value. Exit 2."""

    exit_code = 2


class Problem(NamedTuple):
    """One problem found in a config file, with its exact location."""

    file: str
    line: int
    col: int
    message: str
    hint: str | None = None

    def __str__(self) -> str:
        text = f"{self.file}:{self.line}:{self.col}: {self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


class ConfigError(InputError):
    """A config file has one or more problems; all of them are listed, not just the first."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems) or "invalid configuration")

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)


class PlacementError(InputError):
    """A layout or allocation that cannot be placed; carries the nearest feasible choices."""


class SlurmErrorKind(enum.Enum):
    """Why a Slurm command failed; callers branch on this, never on Slurm's message text
    (only ``slurm/runner.py`` reads that)."""

    NOT_INSTALLED = "not installed"  # the client binary is missing
    NO_CONFIG = "no configuration"  # no slurm.conf, or SLURM_CONF points nowhere
    UNREACHABLE = "controller unreachable"  # slurmctld down or refusing connections
    TIMEOUT = "timeout"  # the command or the controller did not answer in time
    BUSY = "busy"  # the controller asks to try again later
    REFUSED = "refused"  # Slurm answered and said no (bad option, account, limits, ...)
    NOT_FOUND = "not found"  # the job, node or entry does not exist (any more)
    ENDED = "already ended"  # the job is already completing or completed
    BAD_OUTPUT = "bad output"  # the command succeeded but printed what we cannot read
    STUCK = "stuck"  # a state change did not happen in time (requeue release)

    @property
    def transient(self) -> bool:
        """Worth retrying: the request was not judged, the controller just did not take it."""
        return self in (SlurmErrorKind.UNREACHABLE, SlurmErrorKind.TIMEOUT, SlurmErrorKind.BUSY)


class SlurmError(SnrunError):
    """Slurm is missing, the controller is down, or a Slurm command failed (stderr included).
    ``kind`` says which (a ``SlurmErrorKind``)."""

    def __init__(
        self,
        message: str,
        *,
        kind: SlurmErrorKind = SlurmErrorKind.REFUSED,
        where: str | None = None,
        hint: str | None = None,
    ):
        super().__init__(message, where=where, hint=hint)
        self.kind = kind


class JobError(SnrunError):
    """A job or job chain ended badly, or a job directory is inconsistent."""
