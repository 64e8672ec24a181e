"""A shell, a command or a live stack dump on the nodes of a chain's running job
(``srun --jobid --overlap`` through slurm/attach.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from slurm_supernode.errors import InputError, JobError


def running_hosts(job_dir: Path) -> tuple[int, list[str]]:
    """(the chain's current job id, its nodes); JobError when it is not running."""
    from slurm_supernode.chain.ledger import current_job_id
    from slurm_supernode.hostlist import expand
    from slurm_supernode.slurm.job_lookup import job_info

    job_id = current_job_id(job_dir)
    info = job_info(job_id) if job_id else None
    if job_id is None or info is None or not info.running or not info.nodelist:
        state = info.state if info else "unknown to Slurm"
        raise JobError(f"job {job_id or job_dir.name} is not running ({state})", where="JOB")
    return job_id, expand(info.nodelist)


def attach(
    job_dir: Path,
    command: Sequence[str] = (),
    *,
    node: str | None = None,
    py_spy: bool = False,
    ranks: Sequence[int] = (),
    out: TextIO | None = None,
) -> int:
    """Run ``command`` (default: a login shell, with a terminal when there is one) on ``node``
    (default: the job's first), or with ``py_spy`` dump the ranks' stacks (``ranks``: only
    those) into ``out`` in rank order; the exit code."""
    from slurm_supernode.hostlist import fold
    from slurm_supernode.slurm.attach import attach_argv, run_attached

    if ranks and not py_spy:
        raise InputError("--rank goes with --py-spy", where="--rank")
    if py_spy and command:
        raise InputError("give either --py-spy or a command", where="--py-spy")
    job_id, hosts = running_hosts(job_dir)
    if node and node not in hosts:
        raise InputError(
            f"node {node!r} is not part of job {job_id}",
            where="--node",
            hint="nodes: " + fold(hosts),
        )
    if py_spy:
        return _stacks(job_dir, job_id, [node] if node else hosts, ranks, out or sys.stdout)
    if command:
        return run_attached(attach_argv(job_id, [node or hosts[0]], list(command)))
    shell = [os.environ.get("SHELL") or "/bin/bash", "-l"]
    return run_attached(attach_argv(job_id, [node or hosts[0]], shell, pty=sys.stdin.isatty()))


def _stacks(job_dir: Path, job_id: int, nodes: list[str], ranks: Sequence[int], out: TextIO) -> int:
    """The nodes answer at once: their lines are labelled and put back in rank order."""
    from slurm_supernode.forensics.stacks import ranks_in_order
    from slurm_supernode.launch.inputs import load_inputs
    from slurm_supernode.slurm.attach import attach_argv, attached_output

    python = load_inputs(job_dir).python or sys.executable
    helper = [python, "-m", "slurm_supernode", "stacks", f"--job-id={job_id}"]
    helper += [f"--rank={r}" for r in ranks]
    code, text = attached_output(attach_argv(job_id, nodes, helper, label=True))
    out.write(ranks_in_order(text))
    return code
