"""The API's errors in the API's words. The layers below the API serve the command line too,
and their ``InputError``s name its options (``--after``, ``-t/--time``); a program that called
``api.plan(spec)`` gave no option but a parameter (``after``, ``JobSpec.time``). The public
functions are wrapped in ``in_api_words``, which renames the options an error names into
those parameters; the command line (cli/main.py) runs its verbs inside ``command_line()``,
where errors keep its options' names.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import re
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

from slurm_supernode.errors import ConfigError, InputError

P = ParamSpec("P")
R = TypeVar("R")

# a context variable, not a module flag: threads and tasks of an API user are unaffected
_COMMAND_LINE = contextvars.ContextVar("snrun_command_line", default=False)
# an option as an error names it: `--after`, `-t/--time`, `-m`; not `#SBATCH --x`
_OPTION = re.compile(r"(?<!#SBATCH )(?<![\w/'\"-])(?:-[A-Za-z]/)?--?[a-z][a-z0-9-]*(?![\w-])")
_SPECIAL = {
    "--after": "after",
    "--sweep": "grid",
    "--sweep-file": "grid",
    "--throttle": "throttle",
    "--sbatch": "JobSpec.sbatch_args",
    "--env": "JobSpec.env",
    "--profile": "JobSpec.profiles",
    "--block": "JobSpec.blocks",
    "-m": "JobSpec.module",
    "--chdir": "JobSpec.workdir",
    "--no-snapshot": "JobSpec.snapshot",
    "--no-fork-workers": "JobSpec.fork_workers",
    "--fork-workers": "JobSpec.fork_workers",
    "--python": "JobSpec.launcher_python",
}
_WHERE = {"SCRIPT": "JobSpec.program", "JOB": "job"}


@functools.cache
def _parameters() -> dict[str, str]:
    from slurm_supernode.launch.container_options import ContainerOptions
    from slurm_supernode.launch.jobspec import JobSpec
    from slurm_supernode.placement.model import Layout

    table = {
        f"--{f.name.replace('_', '-')}": f"Layout.{f.name}" for f in dataclasses.fields(Layout)
    }
    for f in dataclasses.fields(JobSpec):
        table[f"--{f.name.replace('_', '-')}"] = f"JobSpec.{f.name}"
    for f in dataclasses.fields(ContainerOptions):
        table[f"--container-{f.name.replace('_', '-')}"] = f"JobSpec.container.{f.name}"
    return table | _SPECIAL


def parameter_of(
    option: str, owners: tuple[type, ...] = (), params: tuple[str, ...] = ()
) -> str | None:
    """``-t/--time`` -> ``JobSpec.time``; with ``owners`` (the dataclasses an operation takes:
    ``BenchJob``...) their fields (``--iters`` -> ``BenchJob.iters``, ``--container-mounts``
    -> ``ContainerOptions.mounts``). None for what is no option of snrun's."""
    long = option.split("/")[-1]
    name = long.lstrip("-").replace("-", "_")
    if name in params:  # the operation's own parameter (drain, resume_ok, cluster...)
        return name
    if not owners:
        return _parameters().get(long)
    if name.startswith("container_"):
        return f"ContainerOptions.{name.removeprefix('container_')}"
    for cls in owners:
        fields = {f.name for f in dataclasses.fields(cls)}
        for candidate in (name, f"{name}s"):  # --path: the field paths
            if candidate in fields:
                return f"{cls.__name__}.{candidate}"
    return None


def _rename(text: str, owners: tuple[type, ...], params: tuple[str, ...]) -> str:
    def one(m: re.Match[str]) -> str:
        return parameter_of(m.group(0), owners, params) or m.group(0)

    return _OPTION.sub(one, text)


def to_api_words(
    exc: InputError, owners: tuple[type, ...] = (), params: tuple[str, ...] = ()
) -> InputError:
    """``exc`` with the options it names renamed into the API's parameters (in place):
    ``owners``/``params``, an operation's dataclasses and parameters (api/checked.py)."""
    if exc.where is not None:
        where = _WHERE.get(exc.where) or parameter_of(exc.where, owners, params)
        exc.where = where or exc.where
    exc.message = _rename(exc.message, owners, params)
    if exc.hint is not None:
        exc.hint = _rename(exc.hint, owners, params)
    exc.args = (exc.message,)
    return exc


def in_api_words(func: Callable[P, R]) -> Callable[P, R]:
    """A public function whose InputErrors speak of its parameters (outside the CLI)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except InputError as exc:
            if not _COMMAND_LINE.get() and not isinstance(exc, ConfigError):
                to_api_words(exc)
            raise

    return wrapper


def on_command_line() -> bool:
    """Is the command line calling (its errors keep the options' names)?"""
    return _COMMAND_LINE.get()


@contextlib.contextmanager
def command_line() -> Iterator[None]:
    """The command line calls the API here: its errors keep the options' names."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)
