"""Compiled dataclass methods, kept between runs of the command line.

Creating a dataclass compiles its generated methods (``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, and ``__setattr__``/``__delattr__`` when frozen) from source text, one
``exec`` each, in every process: for the ~40 frozen dataclasses a dry run loads that was half
of what ``snrun`` adds to Python's own start (docs/benchmarks.md). The text is the same in
every run, so its compiled code is kept in a file (``marshal``, per Python build) and the
next run loads it instead of compiling again: same code, same behaviour, ~1 ms instead of
~40 ms.

Only the command line's entry point installs this (``install``), for its own process; a
program that imports the package is left as it is. Nothing here is required: a cache that
cannot be read or written is ignored; ``SNRUN_CACHE_DIR=off`` turns it off with the template
cache.
"""

from __future__ import annotations

import atexit
import builtins
import marshal
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from types import CodeType
from typing import Any

_KEY = f"{sys.implementation.cache_tag}-{sys.version_info.releaselevel}-{sys.hexversion:x}"
# Texts of classes that changed since stay in the file; past this many it starts afresh.
MOST_ENTRIES = 5000


def cache_file(environ: Mapping[str, str] | None = None) -> Path | None:
    """``<cache>/dataclasses/<python>.marshal`` in the user's own cache folder (the one of the
    compiled templates: ``$SNRUN_CACHE_DIR``, default ``~/.cache/slurm-supernode``); None when
    it is off or not the user's own (code loaded from it runs in snrun)."""
    from slurm_supernode.fsutil import user_cache_dir

    env = os.environ if environ is None else environ
    # read here, not through jobenv.SnrunSettings (its cache_dir): jobenv's own dataclasses
    # are to be made through this cache
    folder = user_cache_dir("dataclasses", env.get("SNRUN_CACHE_DIR") or None, env)
    return None if folder is None else Path(folder, f"{_KEY}.marshal")


class CompiledCode:
    """Source text -> code object, loaded from and saved to one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.codes: dict[str, CodeType] = {}
        self.added = 0
        try:
            loaded = marshal.loads(path.read_bytes())
            if isinstance(loaded, dict) and len(loaded) <= MOST_ENTRIES:
                self.codes = loaded
        except (OSError, ValueError, EOFError, TypeError):
            pass

    def exec(self, source: Any, globals_: Any = None, locals_: Any = None) -> None:
        """``exec`` with the compiled code of ``source`` taken from the cache when it is text."""
        if isinstance(source, str):
            code = self.codes.get(source)
            if code is None:
                code = compile(source, "<string>", "exec")
                self.codes[source] = code
                self.added += 1
            source = code
        builtins.exec(source, globals_, locals_)

    def save(self) -> None:
        """Write the cache if this run compiled something new (temp file, then rename)."""
        if not self.added:
            return
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(marshal.dumps(self.codes))
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)


def install(environ: Mapping[str, str] | None = None) -> CompiledCode | None:
    """Let the ``dataclasses`` module compile through the cache for the rest of this process
    (before any dataclass is created); saved at exit. None where it does not apply: no cache
    folder (``SNRUN_CACHE_DIR=off``, or one others can write), or a ``dataclasses`` that does
    not ``exec`` generated text."""
    import dataclasses

    if not any(hasattr(dataclasses, name) for name in ("_create_fn", "_FuncBuilder")):
        return None  # a Python whose dataclasses work differently: nothing to cache
    path = cache_file(environ)
    if path is None:
        return None
    cache = CompiledCode(path)
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    atexit.register(cache.save)
    return cache
