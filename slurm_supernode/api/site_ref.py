"""How a job names its site: the ``--site`` argument as jobs that run elsewhere can use it."""

from __future__ import annotations

from pathlib import Path

from slurm_supernode.user_settings import SnrunSettings


def site_argument(value: str | None) -> str | None:
    """A site file becomes an absolute path (jobs run elsewhere); a name stays a name;
    None is ``$SNRUN_SITE`` (None when that is unset too)."""
    if value and Path(value).expanduser().is_file():
        return str(Path(value).expanduser().absolute())
    return value or SnrunSettings.from_environ().site
