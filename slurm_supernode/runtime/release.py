"""Release a requeued job at once, from outside it.

A job that requeues itself is killed by Slurm, and stays COMPLETING while any of its processes
live, so it cannot release itself. The supervisor starts this module detached (own session,
parent = init) just before ``scontrol requeue``: it waits for the job to be PENDING, applies the
node exclusions and lets it start now instead of after Slurm's 120 s. Where the site's process
tracking kills it with the job (proctrack/cgroup), Slurm's own delay applies.

With ``--requeue=expedite`` (Slurm 25.11+) a plain requeue reruns the job at once, too soon to
change it: when nodes must be excluded the supervisor requeues it *held* instead, and this
module (``--held``) applies the exclusions and releases it (an expedited job then starts at
once, first in line).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from slurm_supernode.errors import SnrunError
from slurm_supernode.site.model import Site
from slurm_supernode.slurm.state import JobState


@dataclass(frozen=True)
class Preference:
    """The super node a requeued job should stay in: its feature, nodes and the count needed."""

    feature: str
    nodes: tuple[str, ...]
    need: int


def preferred_supernode(
    site: Site, hosts: list[str], exclude: tuple[str, ...], het_size: int
) -> Preference | None:
    """The one super node of the allocation that lost nodes, if its spares can replace them.
    Only for a job of that one super node: a job of several would be pinned into one, which
    cannot hold it (Slurm then keeps it pending: BadConstraints). (Het jobs are left alone:
    their components carry the constraint one by one.)"""
    if het_size > 1 or not exclude:
        return None
    hit = {site.node(h).supernode for h in exclude if site.has_node(h)}
    mine = {site.node(h).supernode for h in hosts if site.has_node(h)}
    if len(hit) != 1 or hit != mine:
        return None
    sn = site.supernode(hit.pop())
    if len(sn.nodes) - sum(1 for h in sn.hostnames if h in exclude) < sn.job_size:
        return None
    return Preference(sn.feature, sn.hostnames, sn.job_size)


def spawn_releaser(
    job_id: int,
    exclude: tuple[str, ...],
    log: Path,
    prefer: Preference | None = None,
    held: bool = False,
) -> None:
    """Start ``python -m slurm_supernode.runtime.release`` detached from the job: ``setsid -f``
    forks twice, so the releaser is a child of init (not of the job) before the requeue.
    ``held``: the job will be requeued held (``scontrol requeuehold``); release it."""
    log.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "slurm_supernode.runtime.release", str(job_id), *exclude]
    if held:
        cmd.append("--held")
    if prefer is not None:
        cmd += ["--prefer", prefer.feature, "--prefer-nodes", ",".join(prefer.nodes)]
        cmd += ["--prefer-need", str(prefer.need)]
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


def release(
    job_id: int, exclude: list[str], prefer: Preference | None = None, held: bool = False
) -> str:
    """Exclusions, optional pin to the preferred super node, then start now (``held``: release
    the hold of ``scontrol requeuehold``). Returns what it did."""
    from slurm_supernode.slurm import jobs

    # Back in the queue: base PENDING (a held requeue: +REQUEUE_HOLD, or reason
    # job_requeued_in_held_state) once the old run no longer completes on its nodes.
    poll = 0.1 if held else 0.5  # held: every poll is time the expedited job is not running
    info = jobs.wait_until(job_id, _requeued, timeout=120.0, poll=poll)
    if not _requeued(info.state):
        return f"job {job_id} is {info.state}: nothing to release"
    if not held:
        done = _reshape(job_id, exclude, prefer)
        jobs.release_requeued(job_id, timeout=60)
        return f"job {job_id} released" + (": " + "; ".join(done) if done else "")
    try:  # a held job must never stay held because an update failed
        done = _reshape(job_id, exclude, prefer)
    finally:
        jobs.release_held(job_id)
    return f"job {job_id} released from its hold" + (": " + "; ".join(done) if done else "")


def _requeued(state: JobState) -> bool:
    return state.pending and not state.completing


def _reshape(job_id: int, exclude: list[str], prefer: Preference | None) -> list[str]:
    """Apply the exclusions and the pin to the pending job; what was done, in words."""
    from slurm_supernode.hostlist import fold
    from slurm_supernode.slurm import jobs
    from slurm_supernode.slurm.nodes import node_infos

    done = []
    if exclude:
        jobs.update_job(job_id, ExcNodeList=fold(exclude))
        done.append(f"excluded {fold(exclude)}")
    if prefer is not None:
        free = [
            n.name
            for n in node_infos(list(prefer.nodes))
            if n.usable and n.state == "idle" and n.name not in exclude
        ]
        if len(free) >= prefer.need:
            jobs.update_job(job_id, Features=prefer.feature)
            done.append(f"pinned to super node {prefer.feature} ({len(free)} idle nodes)")
        else:
            done.append(f"{prefer.feature} has {len(free)} idle nodes, needs {prefer.need}")
    return done


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m slurm_supernode.runtime.release", allow_abbrev=False
    )
    ap.add_argument("job_id", type=int)
    ap.add_argument("exclude", nargs="*")
    ap.add_argument("--prefer")
    ap.add_argument("--prefer-nodes", default="")
    ap.add_argument("--prefer-need", type=int, default=0)
    ap.add_argument("--held", action="store_true", help="requeued held: release the hold")
    ns = ap.parse_args(argv)
    prefer = None
    if ns.prefer:
        prefer = Preference(ns.prefer, tuple(ns.prefer_nodes.split(",")), ns.prefer_need)
    try:
        print(f"snrun release: {release(ns.job_id, ns.exclude, prefer, ns.held)}", file=sys.stderr)
    except SnrunError as exc:
        print(f"snrun release: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
