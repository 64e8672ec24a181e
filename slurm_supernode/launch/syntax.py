"""Values of a job that have a syntax, checked before anything is planned or written.

Quoting keeps any value from reaching the shell as code; these checks keep a value that can
never work (``-m 'pkg.mod$(x)'``, a job name with a newline, ``--mail-type=SOMETIMES``) from
passing a dry run and failing later on every node, or being refused by sbatch after the job
directory was written. Each problem is one ``InputError`` naming the option, with a hint.
"""

from __future__ import annotations

import re

from slurm_supernode.errors import InputError
from slurm_supernode.launch.jobspec import JobSpec

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SPACE_OR_CONTROL = re.compile(r"[\s\x00-\x1f\x7f]")
# sbatch --mail-type values (sbatch(1)); a comma list
MAIL_TYPES = (
    *("NONE", "BEGIN", "END", "FAIL", "REQUEUE", "ALL", "INVALID_DEPEND", "STAGE_OUT"),
    *("TIME_LIMIT", "TIME_LIMIT_90", "TIME_LIMIT_80", "TIME_LIMIT_50", "ARRAY_TASKS"),
)
# sbatch --dependency: TYPE:ID[:ID...] joined by ',' (all) or '?' (any), or singleton
_DEP_TYPES = "after|afterany|afterburstbuffer|aftercorr|afternotok|afterok|expand"
_DEP_ID = r"\d+(?:_(?:\d+|\*))?(?:\+\d+)?"
_DEP_ITEM = rf"(?:singleton|(?:{_DEP_TYPES}):{_DEP_ID}(?::{_DEP_ID})*)"
# compiled on first use (re caches it): a job without --dependency never pays for it
_DEPENDENCY = rf"(?i)^{_DEP_ITEM}(?:[,?]{_DEP_ITEM})*$"


def shown(value: str) -> str:
    """repr() of a value for a one-line message: control characters escaped, length bounded."""
    text = repr(value)
    return text if len(text) <= 60 else text[:30] + "..." + text[-15:]


def check_module_name(name: str) -> None:
    """``-m`` takes a dotted Python name, as ``python -m`` does: ``pkg.sub.train``."""
    parts = name.split(".")
    if name.endswith(".py") or "/" in name:
        raise InputError(
            f"{shown(name)} is a file, not a module name",
            where="-m",
            hint=f"give the script without -m (snrun {name} ...), or its module (pkg.train)",
        )
    if name and all(p.isidentifier() for p in parts):
        return
    bad = next((p for p in parts if not p.isidentifier()), name)
    if not name:
        why = "is empty"
    elif not bad:
        why = "has an empty part"
    elif bad == name:
        why = "is not a Python name"
    else:
        why = f"has a part that is not a Python name: {shown(bad)}"
    raise InputError(
        f"module name {shown(name)} {why}",
        where="-m",
        hint="a dotted Python name such as pkg.train (letters, digits, '_'); "
        "for a file give its path instead of -m",
    )


def check_job_values(spec: JobSpec) -> None:
    """Every value of ``spec`` that has a syntax; the first problem raises."""
    if spec.sbatch_args:
        import os

        from slurm_supernode.launch.container_passthrough import check_sbatch_containers

        check_sbatch_containers(spec.sbatch_args, spec.workdir or os.getcwd())
    if spec.module:
        check_module_name(spec.program)
    if spec.job_name is not None:
        _text(spec.job_name, "-J/--job-name", "a job name is one line of printable text")
    for value, where in ((spec.account, "-A/--account"), (spec.qos, "-q/--qos")):
        if value is not None:
            _word(value, where, "one name, no spaces or commas", also=",")
    if spec.partition is not None:
        _word(spec.partition, "-p/--partition", "a partition name, or several joined by ','")
        if "" in spec.partition.split(","):
            raise InputError(
                f"empty partition name in {shown(spec.partition)}",
                where="-p/--partition",
                hint="join names with single commas: a,b",
            )
    for value, where in ((spec.output, "-o/--output"), (spec.error, "-e/--error")):
        if value is not None:
            _text(value, where, "a file name pattern such as logs/%x-%j.out")
    if spec.mail_user is not None:
        _word(spec.mail_user, "--mail-user", "one address (or user name)")
    if spec.mail_type is not None:
        unknown = [t for t in spec.mail_type.split(",") if t.strip().upper() not in MAIL_TYPES]
        if unknown:
            raise InputError(
                f"unknown mail type {shown(unknown[0])}",
                where="--mail-type",
                hint="a comma list of " + ", ".join(MAIL_TYPES),
            )
    if spec.dependency is not None and not re.match(_DEPENDENCY, spec.dependency):
        raise InputError(
            f"bad dependency {shown(spec.dependency)}",
            where="-d/--dependency",
            hint="TYPE:JOBID[:JOBID...] joined by ',' (all) or '?' (any), TYPE one of "
            + _DEP_TYPES.replace("|", ", ")
            + "; or singleton",
        )


def _text(value: str, where: str, hint: str) -> None:
    if not value.strip():
        raise InputError("must not be empty", where=where, hint=hint)
    if _CONTROL.search(value):
        raise InputError(f"{shown(value)} holds a control character", where=where, hint=hint)


def _word(value: str, where: str, hint: str, also: str = "") -> None:
    if not value:
        raise InputError("must not be empty", where=where, hint=hint)
    bad = _SPACE_OR_CONTROL.search(value) or (
        re.search(f"[{re.escape(also)}]", value) if also else None
    )
    if bad:
        what = "a space" if bad.group() == " " else repr(bad.group())
        raise InputError(f"{shown(value)} holds {what}", where=where, hint=hint)
