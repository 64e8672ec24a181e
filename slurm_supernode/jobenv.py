"""What a process inside a job learns from its environment: Slurm's ``SLURM_*`` variables,
torchrun's (``RANK``, ``LOCAL_RANK``, ...) and those the supervisor passes to its step
(``SNRUN_*``). ``JobEnvironment.from_environ`` is the one place that reads them, so
heterogeneous jobs, missing values and bad numbers are handled the same way everywhere. The
user's own ``SNRUN_*`` settings are read in user_settings.py, which the login node's commands
load without this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from slurm_supernode.errors import JobError
from slurm_supernode.user_settings import parse_seconds


def _int(environ: Mapping[str, str], name: str) -> int | None:
    text = (environ.get(name) or "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise JobError(f"{name}={text!r} is not a whole number", where="environment") from None


def _float(environ: Mapping[str, str], name: str) -> float | None:
    try:
        return parse_seconds(environ.get(name) or "")
    except ValueError as exc:
        raise JobError(f"{name}={exc}", where="environment") from None


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
