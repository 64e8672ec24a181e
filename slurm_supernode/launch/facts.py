"""Ask the running Slurm what it offers (the one side-effecting input of the plan step)."""

from __future__ import annotations

from slurm_supernode.errors import SlurmError
from slurm_supernode.hostlist import expand
from slurm_supernode.launch.request import ClusterFacts
from slurm_supernode.site.model import Site


def gather_facts(site: Site, *, required: bool, containers: bool = False) -> ClusterFacts | None:
    """Version, topology plugin, expedited requeue, node features and partitions (and, with
    ``containers``, the container runtimes it offers); None when Slurm cannot be reached and
    ``required`` is false (a dry run on a laptop still plans; with a ``SLURM_CONF`` that names
    no file the Slurm layer is not even loaded)."""
    from slurm_supernode.slurm.conf import missing_conf

    if not required and missing_conf() is not None:
        return None
    from slurm_supernode.slurm.container_runtimes import detect_container_runtimes
    from slurm_supernode.slurm.nodes import node_infos, partition_infos
    from slurm_supernode.slurm.version import detect_features

    try:
        feats = detect_features()
        nodes = node_infos()
        parts = partition_infos()
        runtimes = detect_container_runtimes() if containers else None
    except SlurmError:
        if required:
            raise
        return None
    default = next((p.name for p in parts if p.default), None)
    return ClusterFacts(
        version=(feats.version.major, feats.version.minor, feats.version.patch),
        topology_plugin=feats.topology_plugin,
        supports_segment=bool(feats.supports_segment),
        has_block=feats.has_block,
        node_features={n.name: frozenset(n.features) for n in nodes},
        partition_nodes={p.name: tuple(expand(p.nodes)) if p.nodes else () for p in parts},
        default_partition=default,
        expedited_requeue=feats.expedited_requeue,
        container_runtimes=runtimes,
        channel_per_segment=feats.channel_per_segment,
    )
