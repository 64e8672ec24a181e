"""What a process inside a job learns from its environment: Slurm's ``SLURM_*`` variables,
torchrun's (``RANK``, ``LOCAL_RANK``, ...) and those the supervisor passes to its step
(``SNRUN_*``). ``JobEnvironment.from_environ`` is the one place that reads them, so
heterogeneous jobs, missing values and bad numbers are handled the same way everywhere.
``SnrunSettings.from_environ`` is the one reader of the user's own ``SNRUN_*`` settings (the
default site, the jobs folder, the bench database...), on the login node and in jobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from slurm_supernode.errors import JobError


def _int(environ: Mapping[str, str], name: str) -> int | None:
    text = (environ.get(name) or "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise JobError(f"{name}={text!r} is not a whole number", where="environment") from None


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


def _float(environ: Mapping[str, str], name: str) -> float | None:
    try:
        return parse_seconds(environ.get(name) or "")
    except ValueError as exc:
        raise JobError(f"{name}={exc}", where="environment") from None


SITE_ENV = "SNRUN_SITE"


@dataclass(frozen=True)
class SnrunSettings:
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


@dataclass(frozen=True)
class JobEnvironment:
    """The job's view of its environment. Every field is optional: a login node has none."""

    job_id: int | None = None  # SLURM_JOB_ID
    restart_count: int = 0  # SLURM_RESTART_COUNT (Slurm's requeues of this job)
    nodelist: str | None = None  # SLURM_JOB_NODELIST (or SLURM_NODELIST)
    het_nodelists: tuple[str, ...] = ()  # SLURM_JOB_NODELIST_HET_GROUP_<i>, when SLURM_HET_SIZE > 1
    nodename: str | None = None  # SLURMD_NODENAME: this node's name in Slurm
    node_id: int | None = None  # SLURM_NODEID: this node's index in the step
    topology_addr: str | None = None  # SLURM_TOPOLOGY_ADDR
    topology_addr_pattern: str | None = None  # SLURM_TOPOLOGY_ADDR_PATTERN
    script_context: str | None = None  # SLURM_SCRIPT_CONTEXT: set in a prolog or epilog
    # torchrun's worker variables
    rank: int | None = None
    local_rank: int | None = None
    world_size: int | None = None
    group_rank: int | None = None  # torchrun's node rank
    # what the supervisor gives its step (and the script may set)
    snrun_nodelist: str | None = None  # SNRUN_NODELIST: the allocation, folded
    attempt: int = 0  # SNRUN_ATTEMPT
    master_port: int | None = None  # SNRUN_MASTER_PORT
    supernode: str | None = None  # SNRUN_SUPERNODE (set by the agent for the ranks)
    max_restarts: int | None = None  # SNRUN_MAX_RESTARTS (exported by the script)
    hang_timeout: float | None = None  # SNRUN_HANG_TIMEOUT: overrides the job inputs
    hang_startup: float | None = None  # SNRUN_HANG_STARTUP: overrides the job inputs
    checkpoint_dir: str | None = None  # SNRUN_CHECKPOINT_DIR
    hostname_override: str | None = field(default=None, repr=False)  # SNRUN_HOSTNAME (tests)

    @property
    def het_size(self) -> int:
        return len(self.het_nodelists)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> JobEnvironment:
        """Read ``environ`` (default ``os.environ``); a bad number is a one-line JobError."""
        if environ is None:
            import os

            environ = os.environ
        het = _int(environ, "SLURM_HET_SIZE") or 0
        het_lists: list[str] = []
        if het > 1:
            for i in range(het):
                name = f"SLURM_JOB_NODELIST_HET_GROUP_{i}"
                if not environ.get(name):
                    raise JobError(f"SLURM_HET_SIZE={het} but {name} is not set")
                het_lists.append(environ[name])
        return cls(
            job_id=_int(environ, "SLURM_JOB_ID"),
            restart_count=_int(environ, "SLURM_RESTART_COUNT") or 0,
            nodelist=environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST") or None,
            het_nodelists=tuple(het_lists),
            nodename=environ.get("SLURMD_NODENAME") or None,
            node_id=_int(environ, "SLURM_NODEID"),
            topology_addr=environ.get("SLURM_TOPOLOGY_ADDR") or None,
            topology_addr_pattern=environ.get("SLURM_TOPOLOGY_ADDR_PATTERN") or None,
            script_context=environ.get("SLURM_SCRIPT_CONTEXT") or None,
            rank=_int(environ, "RANK"),
            local_rank=_int(environ, "LOCAL_RANK"),
            world_size=_int(environ, "WORLD_SIZE"),
            group_rank=_int(environ, "GROUP_RANK"),
            snrun_nodelist=environ.get("SNRUN_NODELIST") or None,
            attempt=_int(environ, "SNRUN_ATTEMPT") or 0,
            master_port=_int(environ, "SNRUN_MASTER_PORT"),
            supernode=environ.get("SNRUN_SUPERNODE") or None,
            max_restarts=_int(environ, "SNRUN_MAX_RESTARTS"),
            hang_timeout=_float(environ, "SNRUN_HANG_TIMEOUT"),
            hang_startup=_float(environ, "SNRUN_HANG_STARTUP"),
            checkpoint_dir=environ.get("SNRUN_CHECKPOINT_DIR") or None,
            hostname_override=environ.get("SNRUN_HOSTNAME") or None,
        )

    def hosts(self) -> list[str]:
        """Hostnames of the whole allocation, every component of a heterogeneous job."""
        from slurm_supernode.hostlist import HostlistError, expand

        try:
            if self.snrun_nodelist:
                return expand(self.snrun_nodelist)
            if self.het_nodelists:
                return [h for nodelist in self.het_nodelists for h in expand(nodelist)]
            if self.nodelist:
                return expand(self.nodelist)
        except HostlistError as exc:
            raise JobError(f"bad node list in the job's environment: {exc}") from None
        raise JobError("no SLURM_JOB_NODELIST: this runs inside a Slurm job")

    def hostname(self) -> str:
        """This node's name: Slurm's (SLURMD_NODENAME, several slurmd per host in tests), else
        the host's short name."""
        if self.hostname_override or self.nodename:
            return self.hostname_override or self.nodename  # type: ignore[return-value]
        import socket

        return socket.gethostname().split(".")[0]
