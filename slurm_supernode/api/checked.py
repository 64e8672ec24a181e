"""``checked``: a public function of the operations API (doctor, health, bench, schedules,
bench report) whose arguments are checked against its own annotations at the boundary, like
``JobSpec``'s fields (api/arguments.py): each argument's type, the fields of the job or options
dataclass it takes (``BenchJob``, ``DoctorJob``, ``HealthOptions``), counts >= 1 or >= 0, a
finite timeout. A wrong one is an ``InputError`` naming the parameter (``job.iters``,
``timeout``), never an AttributeError or TypeError from deep inside; the errors of the layers
below are renamed into parameters as for the job API (api/wording.py)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import typing
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

from slurm_supernode.errors import InputError

P = ParamSpec("P")
R = TypeVar("R")

# fields that count something at least once; other int fields count from 0
_AT_LEAST_ONE = {"count", "nproc_per_node", "iters", "size", "allreduce_nproc", "baseline_runs"}


def _namespace() -> dict[str, Any]:
    """Names an annotation may use that its module imports for type checking only."""
    from slurm_supernode.bench.submit import BenchJob
    from slurm_supernode.doctor.job import DoctorJob
    from slurm_supernode.health.probe import HealthOptions
    from slurm_supernode.launch.container_options import ContainerOptions

    return {
        "BenchJob": BenchJob,
        "DoctorJob": DoctorJob,
        "HealthOptions": HealthOptions,
        "ContainerOptions": ContainerOptions,
    }


def _resolve(func: Callable[..., Any]) -> dict[str, Any]:
    """The parameters' annotations that resolve (others are not checked: callables...)."""
    names = {**func.__globals__, **_namespace()}
    out = {}
    for name, text in func.__annotations__.items():
        if name == "return":
            continue
        try:
            out[name] = eval(text, names) if isinstance(text, str) else text
        except Exception:  # a name only a type checker knows: leave it to the function
            continue
    return out


def _check_number(value: object, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    name = where.rsplit(".", 1)[-1]
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{where} must be a finite number, not {value!r}", where=where)
    least = 1 if name in _AT_LEAST_ONE else 0
    if value < least:
        raise InputError(f"{where} must be >= {least}, not {value!r}", where=where)


def _check_options(value: object, where: str) -> object:
    """A job/options dataclass: every field against its annotation (lists made tuples)."""
    from slurm_supernode.api.arguments import check_text, check_type
    from slurm_supernode.launch.container_options import ContainerOptions

    hints = typing.get_type_hints(type(value), localns=_namespace())
    changed = {}
    for f in dataclasses.fields(value):  # type: ignore[arg-type]
        hint, item = hints.get(f.name), getattr(value, f.name)
        where = f"{type(value).__name__}.{f.name}"
        if hint is ContainerOptions:
            if not isinstance(item, (ContainerOptions, Mapping)) and item is not None:
                raise InputError(
                    f"{where} must be an api.ContainerOptions or a mapping of its fields, "
                    f"not {type(item).__name__}",
                    where=where,
                )
            continue
        norm = _with_floats(item, hint, where, check_type)
        if isinstance(norm, str):
            check_text(norm, where)
        _check_number(norm, where)
        if norm is not item:
            changed[f.name] = norm
    return dataclasses.replace(value, **changed) if changed else value  # type: ignore[type-var]


def _with_floats(value: object, hint: Any, where: str, check: Callable[..., Any]) -> Any:
    """``check_type``, with an int taken where a float is meant."""
    args = typing.get_args(hint) if typing.get_origin(hint) is not None else (hint,)
    if float in args and isinstance(value, int) and not isinstance(value, bool):
        return value
    return check(value, hint, where)


def checked(func: Callable[P, R]) -> Callable[P, R]:
    """Check ``func``'s arguments against its annotations before it runs."""
    signature = inspect.signature(func)
    resolved: list[dict[str, Any]] = []

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from slurm_supernode.api.arguments import check_text, check_type

        if not resolved:
            resolved.append(_resolve(func))
        hints = resolved[0]
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise InputError(f"{func.__name__}(): {exc}", where=func.__name__) from None
        for name, value in list(bound.arguments.items()):
            hint = hints.get(name)
            if hint is None:
                continue
            norm = _with_floats(value, hint, name, check_type)
            if dataclasses.is_dataclass(norm) and not isinstance(norm, type):
                norm = _check_options(norm, name)
            elif isinstance(norm, str):
                check_text(norm, name)
            _check_number(norm, name)
            bound.arguments[name] = norm
        try:
            return func(*bound.args, **bound.kwargs)
        except InputError as exc:
            _in_api_words(exc, hints, tuple(signature.parameters))
            raise

    return wrapper


def _in_api_words(exc: InputError, hints: Mapping[str, Any], params: tuple[str, ...]) -> None:
    """The layers' option names as this operation's parameters (outside the command line)."""
    from slurm_supernode.api.wording import on_command_line, to_api_words
    from slurm_supernode.errors import ConfigError

    if on_command_line() or isinstance(exc, ConfigError):
        return
    owners = tuple(h for h in hints.values() if isinstance(h, type) and dataclasses.is_dataclass(h))
    to_api_words(exc, owners, params)
