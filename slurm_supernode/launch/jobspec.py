"""What the user asked for, before any decision: the input of the plan step."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from slurm_supernode.errors import InputError
from slurm_supernode.placement.model import Layout

if TYPE_CHECKING:  # loaded when a container is asked for: a plan without one skips it
    from slurm_supernode.launch.container_options import ContainerOptions

# compiled on first use (re caches them): a job without --env or --time never pays for them
_ENV_KEY = r"^[A-Za-z_][A-Za-z0-9_]*$"
_TIME = r"(?i)^(\d+-)?\d+(:\d+){0,2}$|^\d+-\d+$|^(UNLIMITED|INFINITE)$"
# the ranges of JobSpec's counts, (least, most): the API checks a spec's (api/arguments.py),
# the command line's options take the same (cli/submit.py)
COUNTS = {
    "supernodes": (1, 100_000),
    "nodes": (1, 1_000_000),
    "nproc_per_node": (1, 1024),
    "max_restarts": (0, 10_000),
}


@dataclass(frozen=True)
class JobSpec:
    """A torchrun job as typed on the command line; sbatch-compatible where names match."""

    program: str  # script path, or module name when ``module`` is true
    program_args: tuple[str, ...] = ()
    module: bool = False
    job_name: str | None = None
    partition: str | None = None
    time: str | None = None
    account: str | None = None
    qos: str | None = None
    output: str | None = None
    error: str | None = None
    dependency: str | None = None
    exclusive: bool = True
    mail_type: str | None = None
    mail_user: str | None = None
    sbatch_args: tuple[str, ...] = ()  # passed through verbatim (--sbatch ARG)
    supernodes: int | None = None
    nodes: int | None = None
    allow_partial: bool = False
    nproc_per_node: int | None = None
    layout: Layout = field(default_factory=Layout)
    env: tuple[tuple[str, str], ...] = ()  # --env K=V, in order; later wins
    profiles: tuple[str, ...] = ()  # extra site env profiles (--profile)
    site: str | None = None
    template: str | None = None
    blocks: tuple[tuple[str, str], ...] = ()  # (block name, template path) overrides
    max_restarts: int | None = None  # None: the site's `restarts:`, else 3 per failure class
    preflight: bool = False  # `snrun health` on every node before each attempt
    # torchrun --run-path --start-method=fork (one torch import per node); None: the default,
    # on for scripts on NVIDIA/CPU sites, off for -m modules and Ascend sites (see fork_default)
    fork_workers: bool | None = None
    workdir: str | None = None
    launcher_python: str | None = None  # python3 that runs the agent inside the job
    snapshot: bool = True  # run a copy of the code taken at submission (--no-snapshot: live)
    # Exact hosts of the whole super nodes to run on (bench over named super nodes): a single
    # allocation names them with --nodelist instead of --segment/--switches (Slurm 24.11
    # refuses --segment with a nodelist that spans blocks, and the list is exact anyway).
    pinned_nodes: str | None = None
    # --container-*: torchrun and the ranks in an image (launch.container); None: not given
    container: ContainerOptions | None = None
    # --jobs-dir: where the job directory goes (None: $SNRUN_JOBS_DIR, the site's, ~/.snrun/jobs)
    jobs_dir: str | None = None
    # watching the job (docs/observe.md): "warn" or "requeue" a node found slow (None: warn),
    # tokens / samples one optimizer step processes (None: unknown unless the script says)
    on_slow_node: str | None = None
    tokens_per_step: int | None = None
    samples_per_step: int | None = None
    # the model the job trains (a `snrun plan --model` preset): the plan's communication share
    # for the job's own layout stands beside the measured one (None: no plan figure)
    plan_model: str | None = None

    @property
    def name(self) -> str:
        """Job name: the given one, else the program's base name (like sbatch)."""
        if self.job_name:
            return self.job_name
        base = self.program.rsplit("/", 1)[-1]
        return base or "snrun"


def parse_env_items(items: list[str] | tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """``K=V`` strings to pairs; the value is kept literally (quotes, $(), newlines)."""
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not re.match(_ENV_KEY, key):
            raise InputError(
                f"bad value {item!r}",
                where="--env",
                hint="use NAME=VALUE with NAME a shell variable name",
            )
        pairs.append((key, value))
    return tuple(pairs)


def check_time(value: str | None) -> None:
    """Reject a --time Slurm would reject, before anything is submitted."""
    if value is not None and not re.match(_TIME, value):
        raise InputError(
            f"bad time limit {value!r}",
            where="-t/--time",
            hint="use MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS",
        )
