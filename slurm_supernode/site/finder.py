"""Finding a site config by path or by name: an existing path, ``$SNRUN_SITE``,
``/etc/snrun/sites/NAME.yaml``, then the configs bundled with the package; and why a path cannot
be read, in words (never opening it: a FIFO would block)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from slurm_supernode.errors import InputError
from slurm_supernode.user_settings import SITE_ENV, SnrunSettings

SYSTEM_SITES_DIR = Path("/etc/snrun/sites")


def bundled_sites_dir() -> Path | None:
    from slurm_supernode.resources import site_configs_dir

    try:
        return site_configs_dir()
    except FileNotFoundError:
        return None


def available_sites() -> dict[str, Path]:
    """Site name -> file, system sites shadowing bundled ones of the same name."""
    found: dict[str, Path] = {}
    for folder in (bundled_sites_dir(), SYSTEM_SITES_DIR):
        if folder and folder.is_dir():
            for path in sorted(folder.glob("*.yaml")):
                found[path.stem] = path
    return dict(sorted(found.items()))


def find_site(name_or_path: str | os.PathLike | None) -> Path:
    """The config file of a site given by path or name (see the module docstring)."""
    arg = name_or_path
    if arg is None:
        arg = SnrunSettings.from_environ().site
        if arg is None:
            raise InputError(
                "no site given",
                hint=f"pass --site NAME or FILE, or set ${SITE_ENV}; sites: "
                + (", ".join(available_sites()) or "none installed"),
            )
    name = os.fspath(arg)
    path = Path(name).expanduser()
    why = path_problem(path)
    if why is None:
        return path
    looks_like_path = "/" in name or name.endswith((".yaml", ".yml")) or why != "no such file"
    if looks_like_path:
        raise InputError(why, where=shown_path(name), hint=PATH_HINTS.get(why, _SITE_HINT))
    for folder in (SYSTEM_SITES_DIR, bundled_sites_dir()):
        if folder is not None:
            candidate = folder / f"{name}.yaml"
            if path_problem(candidate) is None:
                return candidate
    names = list(available_sites())
    import difflib  # only when a name is wrong

    close = difflib.get_close_matches(name, names, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise InputError(
        f"unknown site {name!r}",
        hint=hint + "available sites: " + (", ".join(names) or "none") + "; or give a file path",
    )


_SITE_HINT = "give a site name (snrun site list) or the path of a site YAML file"
PATH_HINTS = {
    "no such file": _SITE_HINT,
    "is a directory": "give the YAML file inside it",
    "file name is too long": "each path component may have at most 255 bytes",
}


def shown_path(text: str, limit: int = 80) -> str:
    """A path for a one-line message: control characters escaped, absurd lengths shortened."""
    shown = text.encode("unicode_escape", "backslashreplace").decode("ascii")
    return shown if len(shown) <= limit else shown[: limit // 2] + "..." + shown[-limit // 4 :]


def short_repr(value: str, limit: int = 60) -> str:
    """repr() of a value for a one-line message, shortened in the middle when absurdly long."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit // 2] + "..." + text[-limit // 4 :]


def path_problem(path: Path) -> str | None:
    """Why ``path`` is not a readable regular file, in words (None: it is one).

    Never opens the path: a FIFO would block the reader, so only ``stat`` is used.
    """
    try:
        st = os.stat(path)
    except ValueError:
        return "the path contains a NUL byte"
    except OSError as exc:
        return os_problem(path, exc)
    if stat.S_ISDIR(st.st_mode):
        return "is a directory"
    if stat.S_ISFIFO(st.st_mode):
        return "is a FIFO (named pipe), not a regular file"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file (a device or socket)"
    if not os.access(path, os.R_OK):
        return "is not readable (permission denied)"
    return None


def os_problem(path: Path, exc: OSError) -> str:
    code = exc.errno
    if code == errno.ENAMETOOLONG:
        return "file name is too long"
    if code == errno.ELOOP:
        return "is a loop of symbolic links"
    if code in (errno.EACCES, errno.EPERM):
        return "cannot be reached (permission denied on a directory above it)"
    if code == errno.ENOTDIR:
        for parent in reversed(path.parents):
            if parent.exists() and not parent.is_dir():
                kind = "a file" if parent.is_file() else "not a directory"
                return f"{shown_path(str(parent))} is {kind}" + (
                    ", not a directory" * parent.is_file()
                )
        return "a part of the path is not a directory"
    if code == errno.ENOENT:
        if os.path.islink(path):
            target = shown_path(os.readlink(path))
            return f"is a broken symbolic link (to {target}, which is missing)"
        return "no such file"
    return (exc.strerror or "cannot be read").lower()
