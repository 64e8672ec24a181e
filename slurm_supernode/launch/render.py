"""Render sbatch scripts from Jinja templates. Pure: text in, text out.

Every ``{{ expression }}`` is shell-quoted by the environment's ``finalize`` hook, so a value
with quotes, ``$()``, backticks or newlines reaches the program literally unless a template
marks it otherwise on purpose: ``|comment`` (for ``#`` lines: control characters escaped) or
``|argv`` (a list, each item quoted). ``|raw`` is for values snrun itself checked (env names).
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import jinja2

from slurm_supernode.errors import InputError
from slurm_supernode.fsutil import user_cache_dir
from slurm_supernode.resources import templates_dir
from slurm_supernode.user_settings import SnrunSettings

DEFAULT_TEMPLATE = "sbatch.sh.j2"
BLOCKS = ("header", "environment", "template_env", "setup", "launch", "teardown")


class Raw(str):
    """A string already safe for the shell; finalize leaves it alone."""


def _finalize(value: Any) -> str:
    if isinstance(value, Raw):
        return value
    if value is None:
        return "''"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    return shlex.quote(str(value))


def _comment(value: Any) -> Raw:
    text = str(value)
    return Raw(text.encode("unicode_escape").decode("ascii").replace("\\\\", "\\"))


def _argv(values: Iterable[Any]) -> Raw:
    return Raw(" ".join(shlex.quote(str(v)) for v in values))


def _raw(value: Any) -> Raw:
    return Raw(str(value))


class _QuietBytecodeCache(jinja2.FileSystemBytecodeCache):
    """Jinja's file cache of compiled templates, but a cache that cannot be written (read-only
    or full home) only costs the compile, never the submission."""

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


def bytecode_cache(env: Mapping[str, str] | None = None) -> jinja2.BytecodeCache | None:
    """The per-user cache of compiled templates: compiling the sbatch template is about a third
    of a dry run's own time on a login node. Entries are keyed by the template's path and checked
    against its source and Python's version, so an edited template is never served stale.
    ``SNRUN_CACHE_DIR`` (or ``XDG_CACHE_HOME``) moves it; ``SNRUN_CACHE_DIR=off`` turns it off.
    None when the folder cannot be made or is not the user's own."""
    setting = SnrunSettings.from_environ(env).cache_dir
    folder = user_cache_dir("jinja", setting, os.environ if env is None else env)
    if folder is None:
        return None
    return _QuietBytecodeCache(folder, "%s.cache")


def make_environment(search: Iterable[Path] = ()) -> jinja2.Environment:
    """Jinja environment: user/site folders first, then the bundled templates."""
    paths = [str(p) for p in search] + [str(templates_dir())]
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(paths),
        bytecode_cache=bytecode_cache(),
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(comment=_comment, argv=_argv, raw=_raw)
    return env


def _block_override(
    base: str, blocks: Iterable[tuple[str, str]]
) -> tuple[str, list[tuple[int, str]]] | None:
    """The template that replaces the named blocks of ``base``, and where each block file's
    body starts in it ((line, path), for error messages)."""
    parts = []
    starts: list[tuple[int, str]] = []
    line = 1
    for name, path in blocks:
        if name not in BLOCKS:
            raise InputError(
                f"unknown template block {name!r}",
                where="--template-block",
                hint="valid: " + ", ".join(BLOCKS),
            )
        try:
            body = Path(path).read_text()
        except OSError as exc:
            raise InputError(f"cannot read block file: {exc.strerror}", where=path) from None
        starts.append((line, path))
        parts.append(f"{{% block {name} %}}{body}{{% endblock %}}")
        line += parts[-1].count("\n")
    if not parts:
        return None
    return f"{{% extends {base!r} %}}" + "".join(parts), starts


def render_sbatch(
    context: Mapping[str, Any],
    template: str | None = None,
    blocks: Iterable[tuple[str, str]] = (),
    search: Iterable[Path] = (),
) -> str:
    """Render the sbatch script. ``template`` is a bundled name or a path to a .j2 file;
    ``blocks`` replaces single blocks of it by (name, file) pairs."""
    search = list(search)
    name = template or DEFAULT_TEMPLATE
    if template and Path(template).is_file():
        path = Path(template).resolve()
        search.insert(0, path.parent)
        name = path.name
    env = make_environment(search)
    try:
        override, starts = _block_override(name, blocks) or (None, [])
        tmpl = env.from_string(override) if override else env.get_template(name)
        return tmpl.render(**context)
    except jinja2.TemplateNotFound as exc:
        raise InputError(
            f"template {exc.name!r} not found",
            where="--template",
            hint=f"give a path or a name in {templates_dir()}",
        ) from None
    except jinja2.TemplateSyntaxError as exc:
        where = f"{exc.filename or name}:{exc.lineno}"
        raise InputError(f"template syntax error: {exc.message}", where=where) from None
    except jinja2.UndefinedError as exc:
        raise InputError(
            f"template uses an undefined value: {exc.message}",
            where=_template_line(exc, template or name, starts),
            hint="the values a template can use: "
            + ", ".join(sorted(context))
            + "; see docs/snrun.md, section Templates",
        ) from None
    except (TypeError, ValueError, ArithmeticError, LookupError) as exc:
        if not (template or blocks):  # the bundled template: a bug of snrun, not bad input
            raise
        raise InputError(
            f"template expression failed: {type(exc).__name__}: {exc}",
            where=_template_line(exc, template or name, starts),
            hint="check the expression on that line; see docs/snrun.md, section Templates",
        ) from None


def _template_line(exc: BaseException, shown: str, starts: list[tuple[int, str]]) -> str:
    """``FILE:LINE`` of the template line that raised (Jinja maps its frames to template
    lines; ``starts`` maps lines of a --template-block override to its files)."""
    where = None
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename == "<template>" and starts:
            first, path = max((s for s in starts if s[0] <= tb.tb_lineno), default=starts[0])
            where = f"{path}:{tb.tb_lineno - first + 1}"
        elif filename.endswith(".j2"):
            where = f"{filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return where or shown
