"""What the supervisor's loop needs, from the job inputs and the job's environment."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from slurm_supernode.chain.causes import Cause
from slurm_supernode.forensics.hang import hang_timeout
from slurm_supernode.jobenv import JobEnvironment
from slurm_supernode.launch.inputs import JobInputs
from slurm_supernode.runtime import failfast
from slurm_supernode.runtime.classify import default_budgets
from slurm_supernode.runtime.sbatch_argv import expedited


def budgets_for(env: JobEnvironment, inputs: JobInputs) -> dict[Cause, int]:
    """Restart budgets of this job: the site's `restarts:` (from the job inputs), then
    --max-restarts (the script exports it as SNRUN_MAX_RESTARTS; the inputs keep it too)."""
    given = env.max_restarts if env.max_restarts is not None else inputs.max_restarts
    return default_budgets(given, inputs.site_restarts)


@dataclass(frozen=True)
class SupervisorConfig:
    """Everything the loop needs, from the job inputs and the job's environment."""

    job_dir: Path
    job_id: int
    restart_count: int
    hosts: tuple[str, ...]
    het_size: int
    python: str
    program_argv: tuple[str, ...]
    budgets: Mapping[Cause, int]
    hang_timeout: float  # 0: no hang detection
    hang_startup: float  # before an attempt's first heartbeat
    preflight: bool
    site_file: str
    sbatch_args: tuple[str, ...]
    checkpoint_dir: str
    expedite: bool = False  # --requeue=expedite: Slurm reruns a requeued job at once
    # end the attempt on every node when one node's ranks fail (runtime/failfast.py; on unless
    # SNRUN_FAIL_FAST=0): the other nodes' agents stop their torchrun and still record
    fail_fast: bool = True
    # after a stop request, how long the agents have to end the step before srun is signalled
    # (a safety net for an agent that cannot act: torchrun's own stop takes up to 30 s)
    stop_grace: float = 60.0
    # a sweep's task (JobInputs.sweep): {"dir", "task", "params"}; None: a plain job
    sweep: Mapping[str, object] | None = None
    poll: float = 0.2  # seconds between looks at the step
    backoff: float = 1.0  # pause before restart n: min(n * backoff, 5 * backoff)
    environ: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def from_job(
        cls,
        job_dir: Path,
        inputs: JobInputs,
        env: JobEnvironment,
        environ: Mapping[str, str],
        program_argv: Sequence[str] = (),
    ) -> SupervisorConfig:
        hang = hang_timeout(env.hang_timeout, inputs.hang_timeout)  # on by default
        startup = env.hang_startup if env.hang_startup is not None else inputs.hang_startup
        return cls(
            job_dir=job_dir,
            job_id=env.job_id or 0,
            restart_count=env.restart_count,
            hosts=tuple(env.hosts()),
            het_size=env.het_size,
            python=inputs.python,
            program_argv=tuple(program_argv or inputs.program_argv),
            budgets=budgets_for(env, inputs),
            hang_timeout=hang,
            # no first heartbeat within it: only when set (a job may never write heartbeats)
            hang_startup=startup if startup is not None else math.inf,
            preflight=inputs.preflight,
            site_file=inputs.site_file,
            sbatch_args=tuple(inputs.request["sbatch_args"]),
            checkpoint_dir=env.checkpoint_dir or str(job_dir / "checkpoints"),
            expedite=expedited(inputs.request["sbatch_args"]),
            fail_fast=failfast.enabled(environ),
            sweep=inputs.sweep,
            environ=dict(environ),
        )

    @property
    def jobs_root(self) -> Path:
        """Where ``by-id`` links go: the jobs folder (a sweep's task lies two levels deeper)."""
        if self.sweep:
            return Path(str(self.sweep["dir"])).parent
        return self.job_dir.parent

    @property
    def sweep_dir(self) -> Path | None:
        return Path(str(self.sweep["dir"])) if self.sweep else None
