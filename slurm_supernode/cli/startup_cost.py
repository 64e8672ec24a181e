"""What the command line does not pay at its start: gettext under argparse, and the cyclic
garbage collector while it imports and plans (issue #26: the dry run within 1.3x of importing
jinja2 and yaml).

argparse imports gettext (and, through it, locale and two large regular expressions) to
translate its own messages, and CPython ships no translation of them: ``argparse_without_gettext``
gives argparse the identity it would get, and any other use of ``gettext`` in the process
loads the real module at its first attribute. The collector: a start-up makes ~300k objects
(modules, functions, dataclasses, the site model) and frees almost none, so every collection
walks them for nothing; ``pause_collector`` turns it off until ``resume_collector``, which the
command line calls before anything that can run long (waiting on Slurm, an agent, a
supervisor). Only the command line's entry point does this, for its own process.
"""

from __future__ import annotations

import gc
import importlib
import sys
import types


class _GettextForArgparse(types.ModuleType):
    """``gettext`` and ``ngettext`` untranslated; the real module for any other name."""

    @staticmethod
    def gettext(message: str) -> str:
        return message

    @staticmethod
    def ngettext(singular: str, plural: str, n: int) -> str:
        return singular if n == 1 else plural

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):  # the import system asking what kind of module this is
            raise AttributeError(name)
        if sys.modules.get("gettext") is self:
            del sys.modules["gettext"]
        return getattr(importlib.import_module("gettext"), name)


def argparse_without_gettext() -> None:
    """Before argparse is imported: its messages as written, without importing gettext."""
    if "gettext" not in sys.modules and "argparse" not in sys.modules:
        sys.modules["gettext"] = _GettextForArgparse("gettext")


def pause_collector() -> None:
    """No cyclic garbage collection until ``resume_collector`` (reference counting still
    frees everything else)."""
    gc.disable()


def resume_collector() -> None:
    gc.enable()
