"""What a spawned worker runs (``torchrun ... spawn_entry.py SCRIPT ARGS`` or
``spawn_entry.py -m MODULE ARGS``): the script or module exactly as ``python -u SCRIPT`` or
``python -u -m MODULE`` would run it, with snrun's optimizer-step hook installed once the
script imports torch.

Spawned workers (``--no-fork-workers``, ``-m`` modules, Ascend sites by default) start a fresh
interpreter: no torch is loaded when snrun's code could install the hook, and importing torch
first would change the script's own import order (variables it sets before ``import torch``).
So the hook goes in the moment torch's own import finishes: a finder on ``sys.meta_path``
(Python's documented import hook, nothing of torch or the standard library changed) sees the
``torch`` package being found, and once its module has run, ``runtime/step_hook.install``
registers torch's process-wide optimizer-step hook, as in a forked worker. A script that never
imports torch runs unchanged.

Run by path, standard library only at the top: where snrun cannot be imported (inside a
container), the script just runs. ``sys.path`` is what Python would give the script: its own
folder first (a module: the working directory), never this file's folder, and nothing added
under ``PYTHONSAFEPATH``. Exceptions and exit codes pass through untouched: Python prints a
failing rank's traceback itself, as for any spawned worker.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import runpy
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

WATCHED = "torch"


class _Then(importlib.abc.Loader):
    """A package's own loader, and ``then(module)`` once it has run."""

    def __init__(self, loader: Any, then: Callable[[ModuleType], None]) -> None:
        self.loader, self.then = loader, then

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self.loader  # the module keeps its real loader (inspect, linecache)
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        self.then(module)


class AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``then(module)`` once, right after the top-level package ``name`` was imported."""

    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self.name, self.then = name, then

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)  # once: the other finders decide where it comes from
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Then(spec.loader, self.then)
                return spec  # type: ignore[no-any-return]
        return None


def _install_hook(_module: ModuleType | None = None) -> None:
    """snrun's step hook (``runtime/step_hook``); never in the script's way."""
    try:
        from slurm_supernode.runtime import step_hook

        step_hook.install()
    except Exception:
        pass


def _finish() -> None:
    try:
        from slurm_supernode.runtime import step_hook

        step_hook.finish()
    except Exception:
        pass


def watch_torch() -> None:
    """The hook now if torch is loaded already (a sitecustomize), else once it is."""
    if WATCHED in sys.modules:
        _install_hook()
    else:
        sys.meta_path.insert(0, AfterImport(WATCHED, _install_hook))


def python_path(argv: Sequence[str]) -> None:
    """``sys.path[0]`` as ``python SCRIPT`` (its folder) or ``python -m`` (the working
    directory) gives it, in place of this file's folder; nothing under PYTHONSAFEPATH."""
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
        del sys.path[0]
    if getattr(sys.flags, "safe_path", False):
        return
    module = argv[0] == "-m"
    sys.path.insert(0, os.getcwd() if module else os.path.dirname(os.path.abspath(argv[0])))


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] == "-m" and len(argv) < 2):
        print("usage: spawn_entry.py SCRIPT [ARGS...] | -m MODULE [ARGS...]", file=sys.stderr)
        raise SystemExit(2)
    python_path(argv)
    watch_torch()
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]  # run_module puts the module's file in argv[0]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = argv
            runpy.run_path(argv[0], run_name="__main__")
    finally:
        _finish()


if __name__ == "__main__":
    main()
