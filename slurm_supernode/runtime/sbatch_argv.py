"""The job's own sbatch options, read and edited for the chain's next job: was it submitted
expedited, and what a fresh job of the chain keeps of them.
"""

from __future__ import annotations

from collections.abc import Sequence


def expedited(sbatch_args: Sequence[str]) -> bool:
    """Was the job submitted with ``--requeue=expedite``? The last requeue option wins (snrun
    renders one where the cluster allows it; ``--sbatch`` or ``#SBATCH`` may override it)."""
    mode = None
    for arg in sbatch_args:
        if arg in ("--requeue", "--no-requeue") or arg.startswith("--requeue="):
            mode = arg
    return mode == "--requeue=expedite"


def resubmission_args(sbatch_args: Sequence[str]) -> list[str]:
    """The job's sbatch options for a fresh job of the same chain, without the ones that held
    only for its first submission: a dependency (-d; the chain has started, so it was met,
    and sbatch's last --dependency would replace ``afterany:<this job>``) and a hold."""
    out: list[str] = []
    skip = False
    for arg in sbatch_args:
        if skip:
            skip = False
            continue
        if arg in ("-d", "--dependency"):
            skip = True
            continue
        if arg.startswith(("--dependency=", "-d")) or arg in ("--hold", "-H"):
            continue
        out.append(arg)
    return out
