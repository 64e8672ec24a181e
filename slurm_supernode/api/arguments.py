"""The API's arguments checked at the boundary: type and range of every field of a
``JobSpec`` (and its ``Layout``), of a sweep's grid, and the plain arguments of the public
functions, each an ``InputError`` that names the parameter (``JobSpec.program_args``), never
a command-line option. A string where a sequence of strings is meant is refused: iterating it
would give its characters.

The command line builds its ``JobSpec`` from options its parser typed and bounded (the same
ranges: ``launch.jobspec.COUNTS``) and plans it through ``planning.plan_parsed``, without these
checks; they guard what a program hands the API.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import math
import re
import sys
import types
import typing
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from slurm_supernode.errors import InputError
from slurm_supernode.launch.jobspec import COUNTS, JobSpec
from slurm_supernode.placement.model import Layout

if TYPE_CHECKING:
    from slurm_supernode.launch.container_options import ContainerOptions

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_LONGEST_TEXT = 65536  # no option of a job is longer; more is a mistake, not a value
_LAYOUT_COUNTS = ("tp", "cp", "ep", "dp", "pp", "edp", "dp_replicate", "etp")
MAX_GRID_VALUES = 100_000  # launch/sweep_grid.MAX_TASKS: a dimension longer has too many tasks


def shown(value: object) -> str:
    """A value as an error shows it: its type, and its repr cut short."""
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _describe(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in typing.get_args(hint))
    if origin is collections.abc.Sequence:
        return f"a sequence of {_describe(typing.get_args(hint)[0])}"
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a sequence of {_describe(args[0])}"
        return f"a pair ({', '.join(_describe(a) for a in args)})"
    if hint is type(None):
        return "None"
    name = getattr(hint, "__name__", str(hint))
    return {"str": "str", "int": "int", "bool": "bool (True/False)"}.get(name, name)


def _fits(value: object, hint: Any) -> tuple[bool, object]:
    """Does ``value`` have the type ``hint`` names? Returns it normalised (a list where a
    tuple is meant becomes a tuple)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(hint):
            ok, norm = _fits(value, arg)
            if ok:
                return True, norm
        return False, value
    if origin is collections.abc.Sequence:  # a list or tuple (never a string): a tuple
        return _fits(value, tuple[typing.get_args(hint)[0], ...])  # type: ignore[misc]
    if origin is tuple:
        if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)):
            return False, value
        args = typing.get_args(hint)
        kinds = [args[0]] * len(value) if len(args) == 2 and args[1] is Ellipsis else list(args)
        if len(kinds) != len(value):
            return False, value
        out = []
        for item, kind in zip(value, kinds, strict=True):
            ok, norm = _fits(item, kind)
            if not ok:
                return False, value
            out.append(norm)
        return True, tuple(out)
    if hint is type(None):
        return value is None, value
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if hint is bool:
        return isinstance(value, bool), value
    if hint is str:
        return isinstance(value, str), value
    if isinstance(hint, type):
        return isinstance(value, hint), value
    return True, value


def check_type(value: object, hint: Any, where: str) -> Any:
    """``value`` if it has the type ``hint`` names (lists made tuples), else an InputError."""
    ok, norm = _fits(value, hint)
    if ok:
        return norm
    more = ""
    if isinstance(value, str) and "sequence" in _describe(hint):
        more = f"; a string is no list: give {_as_items(value)!r}"
    raise InputError(
        f"{where} must be {_describe(hint)}, not {shown(value)}{more}",
        where=where,
        hint=f"see {where.split('.')[0]} in docs/api.md" if "." in where else "see docs/api.md",
    )


def _as_items(text: str) -> tuple[str, ...]:
    """What a string meant as a list probably meant: its words as a shell splits them."""
    import shlex

    try:
        return tuple(shlex.split(text)) or (text,)
    except ValueError:
        return (text,)


def check_text(value: str, where: str) -> None:
    """Text that can go into a script or a file name: no NUL, not absurdly long."""
    if "\0" in value:
        raise InputError(f"{where} contains a NUL character", where=where, hint="remove it")
    if len(value) > _LONGEST_TEXT:
        raise InputError(
            f"{where} is {len(value)} characters long", where=where, hint="a mistake? check it"
        )


def check_count(value: int | None, least: int, most: int, where: str) -> None:
    if value is not None and not least <= value <= most:
        raise InputError(
            f"{where} must be between {least} and {most}, not {value}",
            where=where,
            hint=f"a whole number >= {least}",
        )


def _texts(value: object) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from _texts(item)


_HINTS: dict[type, dict[str, Any]] = {}  # a cache: resolving the annotations costs ~2 ms
# fields checked on their own, whose type is loaded only where one is given
_OWN_CHECK = {(JobSpec, "container")}


def _hints(cls: type) -> dict[str, Any]:
    """The annotations of ``cls``'s fields, resolved in its module (but ``_OWN_CHECK``)."""
    if cls not in _HINTS:
        names = vars(sys.modules[cls.__module__])
        _HINTS[cls] = {
            f.name: eval(f.type, names) if isinstance(f.type, str) else f.type
            for f in dataclasses.fields(cls)
            if (cls, f.name) not in _OWN_CHECK
        }
    return _HINTS[cls]


def _check_fields(obj: JobSpec | Layout | ContainerOptions, owner: str) -> dict[str, Any]:
    """Each field of a dataclass against its annotation; the normalised values that differ."""
    hints = _hints(type(obj))
    changed = {}
    for f in dataclasses.fields(obj):
        if f.name not in hints:
            continue  # checked on its own
        where = f"{owner}.{f.name}"
        value = getattr(obj, f.name)
        norm = check_type(value, hints[f.name], where)
        for text in _texts(norm):
            check_text(text, where)
        if norm is not value:
            changed[f.name] = norm
    return changed


def check_layout(layout: object, where: str = "JobSpec.layout") -> Layout:
    if not isinstance(layout, Layout):
        raise InputError(
            f"{where} must be an api.Layout, not {shown(layout)}",
            where=where,
            hint="api.Layout(tp=2, pp=2, ...)",
        )
    _check_fields(layout, "Layout")
    for name in _LAYOUT_COUNTS:
        check_count(getattr(layout, name), 1, 1_000_000, f"Layout.{name}")
    return layout


def check_spec(spec: object, where: str = "spec") -> JobSpec:
    """``spec`` as a JobSpec whose every field has its type and range (sequences given as
    lists become tuples), else the InputError naming the first field that has not."""
    if not isinstance(spec, JobSpec):
        raise InputError(
            f"{where} must be an api.JobSpec, not {shown(spec)}",
            where=where,
            hint="api.JobSpec(program='train.py', ...)",
        )
    changed = _check_fields(spec, "JobSpec")
    container = check_container(spec.container, "JobSpec.container")
    if container is not spec.container:
        changed["container"] = container
    for name, (least, most) in COUNTS.items():
        check_count(getattr(spec, name), least, most, f"JobSpec.{name}")
    check_layout(spec.layout)
    env = changed.get("env", spec.env)
    for key, _ in env:
        if not _NAME.match(key):
            raise InputError(
                f"JobSpec.env: {key!r} is no variable name",
                where="JobSpec.env",
                hint="(('NAME', 'value'), ...) with NAME a shell variable name",
            )
    return dataclasses.replace(spec, **changed) if changed else spec


def check_container(value: object, where: str) -> ContainerOptions | None:
    """None, an ``api.ContainerOptions`` or a mapping of its fields (as the bench and doctor
    jobs take), as options whose every field has its type; else the InputError naming it."""
    if value is None:
        return None
    from slurm_supernode.launch.container_options import ContainerOptions

    try:
        options = ContainerOptions.of(value)
    except InputError as exc:
        exc.where = where
        raise
    changed = _check_fields(options, where)
    return dataclasses.replace(options, **changed) if changed else options


def check_when(when: object, where: str = "when") -> str:
    from slurm_supernode.launch.after import WHEN

    if not isinstance(when, str) or when not in WHEN:
        raise InputError(
            f"{where} must be one of {', '.join(map(repr, WHEN))}, not {shown(when)}",
            where=where,
            hint="'ok': the chain completed; 'notok': it ended otherwise; 'any': either",
        )
    return when


def check_after(after: object, where: str = "after") -> object:
    """``"1234:ok"``, an ``After`` or None."""
    from slurm_supernode.launch.after import After

    if after is None or isinstance(after, After):
        return after
    if not isinstance(after, str) or not after.strip():
        raise InputError(
            f"{where} must be 'JOB[:ok|any|notok]' or an After, not {shown(after)}",
            where=where,
            hint="after='1234:ok'",
        )
    check_text(after, where)
    from slurm_supernode.launch.after import parse_after

    return parse_after(after)  # a condition it does not know is refused before anything


def check_job_ref(job: object, where: str = "job") -> str:
    """A job id (int > 0), its text, ``ARRAY_TASK``, a job directory, or a handle."""
    from pathlib import Path

    if hasattr(job, "job_dir") and isinstance(job.job_dir, Path):
        return str(job.job_dir)
    if isinstance(job, int) and not isinstance(job, bool) and job > 0:
        return str(job)
    if isinstance(job, Path) or (isinstance(job, str) and job.strip()):
        check_text(str(job), where)
        return str(job)
    raise InputError(
        f"{where} must be a job id, a job directory or an api.Job, not {shown(job)}",
        where=where,
        hint="a job id snrun printed (1234), or the chain's directory",
    )


def check_seconds(value: object, where: str) -> float | None:
    """A timeout: None or a number >= 0 (not NaN)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise InputError(
            f"{where} must be a number of seconds or None, not {shown(value)}", where=where
        )
    if value < 0:
        raise InputError(f"{where} must be >= 0, not {value}", where=where)
    return float(value)


def check_callable(value: object, where: str) -> None:
    if value is not None and not callable(value):
        raise InputError(f"{where} must be callable or None, not {shown(value)}", where=where)


def grid_values(name: object, values: object) -> list[str]:
    """One dimension of ``grid(name=values)``: a name that is a variable name, and a sequence
    (list, tuple, range, ...; not a string, not a mapping) of str, int or float."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise InputError(
            f"grid: {name!r} is no parameter name",
            where="grid",
            hint="names are variable names: grid(lr=[...], seed=range(4))",
        )
    where = f"grid({name}=...)"
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise InputError(
            f"{where}: the values must be a list, tuple or range, not {shown(values)}",
            where=where,
            hint=f"grid({name}=[{values!r}]) for one value" if isinstance(values, str) else None,
        )
    if isinstance(values, typing.Sized) and len(values) > MAX_GRID_VALUES:
        raise InputError(f"{where}: {len(values)} values, more than {MAX_GRID_VALUES}", where=where)
    out = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise InputError(
                f"{where}: a value must be str, int or float, not {shown(value)}", where=where
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"{where}: {value!r} is no value to pass", where=where)
        text = str(value)
        check_text(text, where)
        if not text.strip():
            raise InputError(f"{where}: an empty value", where=where)
        out.append(text)
        if len(out) > MAX_GRID_VALUES:
            raise InputError(f"{where}: more than {MAX_GRID_VALUES} values", where=where)
    if not out:
        raise InputError(f"{where}: no values", where=where, hint="give at least one value")
    return out


def check_watcher(watcher: object, where: str = "watcher") -> None:
    from slurm_supernode.api.watcher import Watcher

    if watcher is not None and not isinstance(watcher, Watcher):
        raise InputError(
            f"{where} must be an api.Watcher or None, not {shown(watcher)}", where=where
        )


def check_path_like(value: object, where: str) -> None:
    """None, a str or a Path (a directory's name)."""
    from pathlib import Path

    if value is None:
        return
    if not isinstance(value, (str, Path)) or not str(value).strip():
        raise InputError(
            f"{where} must be a path (str or Path) or None, not {shown(value)}", where=where
        )
    check_text(str(value), where)


def check_ranks(rank: object, where: str = "rank") -> tuple[int, ...]:
    """None, one rank or a sequence of ranks (ints >= 0)."""
    if rank is None:
        return ()
    items = (rank,) if isinstance(rank, int) and not isinstance(rank, bool) else rank
    items = check_type(items, tuple[int, ...], where)
    for r in items:
        check_count(r, 0, 10_000_000, where)
    return tuple(items)


def check_log_selection(
    attempt: object, node: object, streams: object, tail: object
) -> tuple[str, ...]:
    """``Job.logs``' keywords; the streams as a tuple."""
    from slurm_supernode.api.logs import STREAMS

    check_count(check_type(attempt, int | None, "attempt"), 0, 10_000_000, "attempt")
    check_type(node, str | None, "node")
    check_count(check_type(tail, int | None, "tail"), 0, 100_000_000, "tail")
    chosen = check_type(streams, tuple[str, ...], "streams")
    unknown = [s for s in chosen if s not in STREAMS]
    if unknown or not chosen:
        raise InputError(
            f"streams must name some of {', '.join(STREAMS)}, not {chosen!r}", where="streams"
        )
    return tuple(chosen)


def check_grid_call(spec: object, tasks: object, throttle: object) -> JobSpec:
    """A sweep's ``(spec, grid, throttle=)``: the spec, a ``Grid`` from ``grid(...)``, and a
    throttle (tasks at once) >= 1 or None."""
    from slurm_supernode.launch.param_grid import Grid

    checked = check_spec(spec)
    if not isinstance(tasks, Grid):
        raise InputError(
            f"grid must be what api.grid(...) returns, not {shown(tasks)}",
            where="grid",
            hint="api.grid(lr=['1e-4', '3e-4'], seed=range(4))",
        )
    check_count(check_type(throttle, int | None, "throttle"), 1, 100_000, "throttle")
    return checked
