"""Small file helpers shared by every layer: nothing is ever half-written."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
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


def check_output_path(path: str | os.PathLike[str], where: str) -> Path:
    """Refuse, as one line, an output file the user named that cannot be written as given.

    Writes go only where the user pointed: a missing parent directory is not created (it is
    often a typo), a parent that is a file, a directory in place of the file, a name too long
    or a directory without write permission are refused before any work is done.
    """
    import errno
    import stat

    from slurm_supernode.errors import InputError

    target = Path(path).expanduser()
    parent = target.parent
    try:
        st = os.stat(target)
    except ValueError:
        raise InputError("the path contains a NUL byte", where=where) from None
    except OSError as exc:
        st = None
        if exc.errno == errno.ENAMETOOLONG:
            raise InputError(
                "file name is too long",
                where=where,
                hint="each path component may have at most 255 bytes",
            ) from None
        if exc.errno == errno.ENOTDIR:
            above = next(
                (p for p in reversed(target.parents) if p.exists() and not p.is_dir()), parent
            )
            what = "a file, not a directory" if above.is_file() else "not a directory"
            raise InputError(
                f"{above} is {what}", where=where, hint="choose another path"
            ) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise InputError(f"{target} is a directory", where=where, hint="give a file name inside it")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise InputError(
            f"{target} exists and is not a regular file", where=where, hint="choose another path"
        )
    if not parent.is_dir():
        raise InputError(
            f"directory {parent} does not exist",
            where=where,
            hint=f"create it first (mkdir -p {parent}) or choose another path",
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"directory {parent} is not writable", where=where, hint="check it")
    return target


def user_cache_dir(name: str, setting: str | None, environ: Mapping[str, str]) -> str | None:
    """``<base>/<name>``, made if needed, for what snrun compiles once and reuses (Jinja's
    compiled templates). ``setting`` is ``$SNRUN_CACHE_DIR`` ("off": no cache; unset:
    ``$XDG_CACHE_HOME/slurm-supernode``, default ``~/.cache``). None when it is off, cannot be
    made, or is not the user's own: someone else could plant compiled code there."""
    if setting == "off":
        return None
    base = setting or os.path.join(
        environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "slurm-supernode",
    )
    folder = os.path.join(base, name)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.stat(folder)
    except OSError:
        return None
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        return None
    return folder
