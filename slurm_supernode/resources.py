"""Locate the bundled templates and site configs, installed or in a source checkout."""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    installed = _PKG / "_data" / name
    if installed.is_dir():
        return installed
    checkout = _PKG.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"bundled {name}/ not found next to {_PKG}")


def templates_dir() -> Path:
    """Folder with the bundled Jinja templates (templates/ in the repo)."""
    return _find("templates")


def site_configs_dir() -> Path:
    """Folder with the bundled site configs (site-configs/ in the repo)."""
    return _find("site-configs")
