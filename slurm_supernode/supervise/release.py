"""Release a requeued job at once, from outside it.

A job that requeues itself is killed by Slurm, and stays COMPLETING while any of its processes
live, so it cannot release itself. The supervisor starts this module detached (own session,
parent = init) just before ``scontrol requeue``: it waits for the job to be PENDING, applies the
node exclusions and lets it start now instead of after Slurm's 120 s. Where the site's process
tracking kills it with the job (proctrack/cgroup), Slurm's own delay applies: nothing is lost.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from slurm_supernode.errors import SnrunError


def spawn_releaser(job_id: int, exclude: tuple[str, ...], log: Path) -> None:
    """Start ``python -m slurm_supernode.supervise.release`` detached from the job: ``setsid -f``
    forks twice, so the releaser is a child of init (not of the job) before the requeue."""
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "slurm_supernode.supervise.release", str(job_id), *exclude]
    with open(log, "ab") as out:
        subprocess.run(
            ["setsid", "-f", *cmd],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            close_fds=True,
            check=False,
            timeout=30,
        )


def release(job_id: int, exclude: list[str]) -> None:
    from ClusterShell.NodeSet import NodeSet

    from slurm_supernode.slurm import jobs

    deadline_wait = 120.0
    info = jobs.wait_for(job_id, ["PENDING"], timeout=deadline_wait, poll=0.5)
    if info.state != "PENDING":
        return
    if exclude:
        jobs.update_job(job_id, ExcNodeList=str(NodeSet.fromlist(exclude)))
    jobs.release_requeued(job_id, timeout=60)


def main(argv: list[str]) -> int:
    if not argv or not argv[0].isdigit():
        print("usage: python -m slurm_supernode.supervise.release JOBID [NODE...]", file=sys.stderr)
        return 2
    try:
        release(int(argv[0]), argv[1:])
    except SnrunError as exc:
        print(f"snrun release: {exc}", file=sys.stderr)
        return 1
    print(f"snrun release: job {argv[0]} released", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
