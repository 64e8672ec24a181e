"""What a job asks of switch/nvidia_imex: one IMEX channel per segment where the site wants it
(``imex_channels.per_segment``) and the running Slurm gives it (``ClusterFacts``, 25.11+).

A job of whole super nodes asked for with ``--segment`` has one segment per super node, so
per-segment channels are one channel per NVLink domain: ranks of one rack share a channel, and
the job holds as many channels as racks. Where the Slurm cannot, the job still runs with one
channel for all its trays (what 24.11 does) and the plan says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from slurm_supernode.site.model import Site

PER_SEGMENT = "--network=unique-channel-per-segment"


def imex_network(
    site: Site,
    slurm: tuple[bool, tuple[int, int, int] | None] | None,
    components: Sequence[Sequence[str]],
    notices: list[str],
) -> list[str]:
    """The job option (``[]`` or ``[PER_SEGMENT]``); a notice where the site asks for
    per-segment channels that this Slurm or this request cannot give. ``slurm``: (channel per
    segment offered, version) of the running Slurm, None when it was not reached."""
    if not (site.imex_channels and site.imex.per_segment):
        return []
    segmented = any(opt.startswith("--segment=") for comp in components for opt in comp)
    if not segmented:
        return []  # one segment: the job's one channel is already per segment
    if slurm is None:
        notices.append("Slurm not reachable: one IMEX channel per job (per segment not asked)")
        return []
    offered, found = slurm
    if not offered:
        version = ".".join(map(str, found)) if found else "this Slurm"
        notices.append(
            f"site asks for one IMEX channel per segment, but Slurm {version} gives one per job"
            " (needs switch/nvidia_imex and Slurm >= 25.11)"
        )
        return []
    return [PER_SEGMENT]
