"""Compiled dataclass methods, kept between runs of the command line.

Creating a dataclass compiles its generated methods (``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, and ``__setattr__``/``__delattr__`` when frozen) from source text, one
``exec`` each, in every process: for the ~40 frozen dataclasses a dry run loads that was half
of what ``snrun`` adds to Python's own start (docs/benchmarks.md). The text is the same in
every run, so its compiled code is kept in a file (``marshal``, per Python build) and the
next run loads it instead of compiling again: same code, same behaviour, ~1 ms instead of
~40 ms.

Only the command line's entry point installs this (``install``, once per process: a second
call returns the first cache), for its own process; a program that imports the package is
left as it is. The file maps each source text to its code in ``marshal`` bytes, decoded only
when that text is used, so loading it costs ~1 ms whatever it holds; texts this run did not
use are dropped once there are more than ``MOST_ENTRIES`` (old versions' classes pile up
otherwise). Nothing here is required: a cache that cannot be read or written is ignored;
``SNRUN_CACHE_DIR=off`` turns it off with the template cache.
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

# per Python build; "-v2": values are marshal bytes (the first format held code objects)
_KEY = f"{sys.implementation.cache_tag}-{sys.version_info.releaselevel}-{sys.hexversion:x}-v2"
# Past this many texts, those this run did not use are dropped when the file is written.
MOST_ENTRIES = 1000


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
        self.codes: dict[str, bytes] = {}  # text -> marshal.dumps(code)
        self.used: set[str] = set()
        self.added = 0
        try:
            loaded = marshal.loads(path.read_bytes())
            if isinstance(loaded, dict):
                self.codes = loaded
        except (OSError, ValueError, EOFError, TypeError):
            pass

    def exec(self, source: Any, globals_: Any = None, locals_: Any = None) -> None:
        """``exec`` with the compiled code of ``source`` taken from the cache when it is text."""
        if isinstance(source, str):
            code = self._load(source)
            if code is None:
                code = compile(source, "<string>", "exec")
                self.codes[source] = marshal.dumps(code)
                self.added += 1
            self.used.add(source)
            source = code
        builtins.exec(source, globals_, locals_)

    def _load(self, source: str) -> CodeType | None:
        data = self.codes.get(source)
        if not isinstance(data, bytes):
            return None
        try:
            code = marshal.loads(data)
        except (ValueError, EOFError, TypeError):
            return None
        return code if isinstance(code, CodeType) else None

    def save(self) -> None:
        """Write the cache if this run compiled something new (temp file, then rename)."""
        if not self.added:
            return
        codes = self.codes
        if len(codes) > MOST_ENTRIES:
            codes = {text: data for text, data in codes.items() if text in self.used}
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(marshal.dumps(codes))
            os.replace(tmp, self.path)
        except (OSError, ValueError):
            tmp.unlink(missing_ok=True)


def install(environ: Mapping[str, str] | None = None) -> CompiledCode | None:
    """Let the ``dataclasses`` module compile through the cache for the rest of this process
    (before any dataclass is created); saved at exit. None where it does not apply: no cache
    folder (``SNRUN_CACHE_DIR=off``, or one others can write), or a ``dataclasses`` that does
    not ``exec`` generated text."""
    import dataclasses

    if not any(hasattr(dataclasses, name) for name in ("_create_fn", "_FuncBuilder")):
        return None  # a Python whose dataclasses work differently: nothing to cache
    installed = getattr(vars(dataclasses).get("exec"), "__self__", None)
    if isinstance(installed, CompiledCode):
        return installed  # installed already: loading the file again would cost as much
    path = cache_file(environ)
    if path is None:
        return None
    cache = CompiledCode(path)
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    atexit.register(cache.save)
    return cache
