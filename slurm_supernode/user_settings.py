"""The user's own ``SNRUN_*`` settings (the default site, the jobs folder, the bench database,
...), read in one place on the login node and in jobs alike: ``SnrunSettings.from_environ``.
Apart from jobenv.py (what a process inside a job reads of Slurm and torchrun) so that the
login node's commands do not load the job's view: every dataclass a dry run loads costs it
~1% (docs/benchmarks.md), hence a NamedTuple here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple


def parse_seconds(text: str) -> float | None:
    """A duration in seconds >= 0 (``SNRUN_HANG_TIMEOUT``...), None when empty. ValueError
    otherwise: the caller says where it came from (the job's environment, ``--env``)."""
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(f"{text!r} is not a number of seconds >= 0")
    return value


SITE_ENV = "SNRUN_SITE"


class SnrunSettings(NamedTuple):
    """The user's ``SNRUN_*`` settings; an unset or empty variable is None. Values are checked
    where they are used, which knows the option they stand in for."""

    site: str | None = None  # SNRUN_SITE: the default --site (name or file)
    site_file: str | None = None  # SNRUN_SITE_FILE: the site file of a doctor job
    job_dir: str | None = None  # SNRUN_JOB_DIR: the job directory of a doctor job
    jobs_dir: str | None = None  # SNRUN_JOBS_DIR: the default --jobs-dir
    bench_db: str | None = None  # SNRUN_BENCH_DB: the default bench results database
    cache_dir: str | None = None  # SNRUN_CACHE_DIR: compiled templates ("off": no cache)
    snapshot_max_mb: str | None = None  # SNRUN_SNAPSHOT_MAX_MB: the code snapshot's limit
    debug: bool = False  # SNRUN_DEBUG=1: tracebacks instead of one-line errors
    cluster: str | None = None  # SNRUN_CLUSTER: the default --cluster (docs/remote.md)
    clusters_file: str | None = None  # SNRUN_CLUSTERS_FILE: instead of the XDG clusters.yaml
    ssh_control_dir: str | None = None  # SNRUN_SSH_CONTROL_DIR: the SSH control sockets
    config_home: str | None = None  # XDG_CONFIG_HOME (default ~/.config)
    runtime_dir: str | None = None  # XDG_RUNTIME_DIR: where the control sockets go, if set

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> SnrunSettings:
        """Read ``environ`` (default ``os.environ``)."""
        if environ is None:
            import os

            environ = os.environ
        return cls(
            site=environ.get(SITE_ENV) or None,
            site_file=environ.get("SNRUN_SITE_FILE") or None,
            job_dir=environ.get("SNRUN_JOB_DIR") or None,
            jobs_dir=environ.get("SNRUN_JOBS_DIR") or None,
            bench_db=environ.get("SNRUN_BENCH_DB") or None,
            cache_dir=environ.get("SNRUN_CACHE_DIR") or None,
            snapshot_max_mb=environ.get("SNRUN_SNAPSHOT_MAX_MB") or None,
            debug=environ.get("SNRUN_DEBUG") == "1",
            cluster=environ.get("SNRUN_CLUSTER") or None,
            clusters_file=environ.get("SNRUN_CLUSTERS_FILE") or None,
            ssh_control_dir=environ.get("SNRUN_SSH_CONTROL_DIR") or None,
            config_home=environ.get("XDG_CONFIG_HOME") or None,
            runtime_dir=environ.get("XDG_RUNTIME_DIR") or None,
        )
