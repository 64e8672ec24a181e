"""snrun's Python API: what the command line does, callable from a program or a notebook.

    from slurm_supernode import api

    spec = api.JobSpec(program="train.py", program_args=("--lr", "3e-4"), supernodes=2)
    plan = api.plan(spec)              # the dry run: script, request, rank map; no side effect
    job = api.submit(plan)             # writes the job directory, sbatch; a Job handle
    job.wait(timeout=3600, progress=print)
    job.attempts(); job.logs(rank=0); job.cancel()
    job = api.Job.from_id(1234)        # a handle on a chain submitted earlier (any attempt's id)
    sweep = api.submit_sweep(spec, api.grid(lr=["1e-4", "3e-4"], seed=range(4)))  # a job array
    job.then(spec, "ok")               # starts once job's whole chain ended ok (or api.then)

The operations have their own modules: ``from slurm_supernode.api import doctor, health, bench,
schedules`` (and ``bench_report``). The CLI's verbs are argument parsing plus one call into this
package (docs/api.md). Names
are resolved on first use (PEP 562), so ``import slurm_supernode.api`` costs nothing and a
verb loads only the modules it needs (``snrun --dry-run`` stays light).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slurm_supernode.api.chain import then
    from slurm_supernode.api.chain_state import ChainState
    from slurm_supernode.api.job import Job, WaitTimeout
    from slurm_supernode.api.planning import JobPlan, plan
    from slurm_supernode.api.spec import ContainerOptions, JobSpec, Layout
    from slurm_supernode.api.submission import submit
    from slurm_supernode.api.sweep import Sweep, grid, submit_sweep
    from slurm_supernode.api.watcher import Watcher

# public name -> the module of this package that defines it. A module never bears the name of
# a public name (planning.py, not plan.py): importing a submodule binds its name on the package,
# which would hide the function of that name.
_EXPORTS: dict[str, str] = {
    "JobSpec": "spec",
    "ContainerOptions": "spec",
    "Layout": "spec",
    "JobPlan": "planning",
    "plan": "planning",
    "submit": "submission",
    "Job": "job",
    "WaitTimeout": "job",
    "ChainState": "chain_state",
    "Watcher": "watcher",
    "Sweep": "sweep",
    "grid": "sweep",
    "submit_sweep": "sweep",
    "then": "chain",
}

__all__ = [
    "ChainState",
    "ContainerOptions",
    "Job",
    "JobPlan",
    "JobSpec",
    "Layout",
    "Sweep",
    "WaitTimeout",
    "Watcher",
    "grid",
    "plan",
    "submit",
    "submit_sweep",
    "then",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # the next access skips this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
