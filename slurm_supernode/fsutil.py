"""Small file helpers shared by every layer: nothing is ever half-written."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_atomic(path: str | os.PathLike[str], text: str, mode: int = 0o644) -> Path:
    """Write ``text`` to a temp file beside ``path``, fsync, then rename over it: readers never
    see half a file, and a crash leaves the old one. The one implementation in the package."""
    import tempfile

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def write_json_atomic(path: str | os.PathLike[str], data: Any) -> Path:
    return write_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def expand_path(path: str) -> Path:
    """``~`` and ``$VARS`` expanded (site path settings are written that way)."""
    return Path(os.path.expandvars(os.path.expanduser(path)))
