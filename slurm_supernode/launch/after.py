"""``--after JOB[:ok|any|notok]``: a job that starts when another job's *chain* has ended that
way. Pure: parsing, the Slurm dependency text, and whether a chain's end satisfies it.
chain/dependents.py does the side effects (submit held, register, rewrite, release).

Slurm stays the engine: the dependent waits on ``after<when>:<the chain's current job id>``,
and the predecessor's supervisor rewrites that id whenever the chain goes on under a new one
(docs/snrun.md, section Dependencies).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from slurm_supernode.errors import InputError

WHEN = ("ok", "any", "notok")


@dataclass(frozen=True)
class After:
    """What ``--after`` asked for: the predecessor (a job id, ``ARRAY_TASK`` or a job
    directory) and how its chain must end."""

    job: str
    when: str = "ok"

    def __post_init__(self) -> None:
        if self.when not in WHEN:
            raise InputError(
                f"unknown condition {self.when!r}", where="--after", hint="ok, any or notok"
            )

    def satisfied_by(self, state: str) -> bool:
        """Does a chain that ended in ``state`` (COMPLETED, FAILED, CANCELLED...) let the
        dependent start? ok: COMPLETED; notok: any other end; any: every end."""
        if self.when == "any":
            return True
        return (state == "COMPLETED") is (self.when == "ok")


def parse_after(text: str) -> After:
    """``1234``, ``1234:ok``, ``/path/to/jobdir:notok``, ``1234_2:any``."""
    job, sep, when = text.rpartition(":")
    if not sep or when not in WHEN:
        if sep and when and "/" not in when and not when.isdigit():
            raise InputError(
                f"unknown condition {when!r}",
                where="--after",
                hint="JOB, JOB:ok, JOB:any or JOB:notok",
            )
        job, when = text, "ok"
    job = job.strip()
    if not job:
        raise InputError("no job given", where="--after", hint="--after 1234:ok")
    return After(job=job, when=when)


def dependency(when: str, targets: Sequence[str], rest: str | None = None) -> str:
    """Slurm's ``--dependency`` value: ``afterok:12:13`` (all of them), ``,`` and the user's own
    ``-d`` (both must hold)."""
    text = f"after{when}:" + ":".join(targets)
    return f"{text},{rest}" if rest else text


def check_user_dependency(rest: str | None) -> None:
    """``-d`` beside ``--after``: both must hold, so an either-or (``?``) cannot be joined."""
    if rest and "?" in rest:
        raise InputError(
            "an either-or dependency ('?') cannot be combined with --after",
            where="-d/--dependency",
            hint="give the conditions with ',' (all must hold), or drop --after",
        )
