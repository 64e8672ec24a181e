"""Is there a Slurm configuration to talk to? Answered from the environment alone (no command
run, nothing heavy imported), so a plan on a machine without Slurm skips the Slurm layer."""

from __future__ import annotations

import os
from collections.abc import Mapping


def missing_conf(environ: Mapping[str, str] | None = None) -> str | None:
    """The ``SLURM_CONF`` path when it names a file that does not exist (Slurm's clients would
    retry for a minute before failing); None when it is unset or exists."""
    conf = (os.environ if environ is None else environ).get("SLURM_CONF")
    return conf if conf and not os.path.exists(conf) else None
