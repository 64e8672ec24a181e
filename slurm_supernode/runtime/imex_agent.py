"""The agent's IMEX step before torchrun (sites with ``imex_channels``): the preflight of this
tray (runtime/imex_preflight.py), recorded in the ledger as this node's exit with
``imex_failed`` when it fails, and the job's channel for the ranks' environment:
``NVIDIA_IMEX_CHANNELS`` (what libnvidia-container, enroot's and the NVIDIA container toolkit's
hooks read to pass the channel into a container) and ``SNRUN_IMEX_CHANNELS``."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from slurm_supernode.runtime.imex_probe import channels_in
from slurm_supernode.site.model import Site

IMEX_EXIT = 1  # the agent's exit code when its tray fails the preflight


@dataclass(frozen=True)
class ImexGate:
    exit_code: int | None = None  # set: the tray failed, the agent stops here
    env: dict[str, str] = field(default_factory=dict)


def segment_of(site: Site, hosts: list[str], hostname: str) -> list[str]:
    """This tray's super node in the job, in site order (a segment of a block job)."""
    if not site.has_node(hostname):
        return [hostname]
    mine = site.supernode_of(hostname)
    job = set(hosts)
    return [h for h in mine.hostnames if h in job]


def imex_gate(
    job_dir: Path, site: Site, hosts: list[str], hostname: str, attempt: int, job_id: int
) -> ImexGate:
    """Run the preflight where the site asks for it; record a failure; the ranks' variables."""
    if not site.imex_channels:
        return ImexGate()
    if site.imex.preflight:
        from slurm_supernode.chain import ledger
        from slurm_supernode.runtime.imex_preflight import run_preflight

        segment = segment_of(site, hosts, hostname)
        problems, seen = run_preflight(job_dir, attempt, hostname, segment)
        if problems:
            why = "; ".join(problems)
            print(f"snrun: {hostname}: IMEX preflight failed: {why}", file=sys.stderr, flush=True)
            ledger.append(
                job_dir,
                "node_exit",
                attempt=attempt,
                job_id=job_id,
                node=hostname,
                exit_code=IMEX_EXIT,
                imex_failed=True,
                error=why,
            )
            return ImexGate(exit_code=IMEX_EXIT)
        channels = tuple(seen["channels"])
    else:
        channels = channels_in() or ()
    if not channels:
        return ImexGate()
    value = ",".join(str(c) for c in channels)
    return ImexGate(env={"NVIDIA_IMEX_CHANNELS": value, "SNRUN_IMEX_CHANNELS": value})
