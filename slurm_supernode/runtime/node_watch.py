"""Everything the agent keeps watching on its node while torchrun runs, started and stopped as
one: the sampler (runtime/sampler.py) and, where the site names a directory or a gateway for
it, the node's Prometheus textfile and/or Pushgateway group (runtime/prom_node.py). One call
each way keeps the agent's own flow short."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from slurm_supernode.placement.model import RankMap
from slurm_supernode.runtime import prom_node, sampler
from slurm_supernode.site.model import Site


def start_node_watch(
    job_dir: Path,
    attempt: int,
    job_id: int,
    node: str,
    site: Site,
    rank_map: RankMap,
    devices: Sequence[int],
    environ: Mapping[str, str],
) -> Callable[[], None]:
    """Start sampling and publishing; the returned call stops both (and removes the textfile)."""
    sampling = sampler.start_sampling(
        job_dir, attempt, node, site.vendor, tuple(devices), site.observe, environ
    )
    unpublish = prom_node.start_publishing(
        site.paths.prometheus_textfile_dir,
        job_dir,
        prom_node.node_context(job_id, attempt, node, rank_map.node(node).supernode),
        node,
        [r.rank for r in rank_map.ranks if r.hostname == node],
        prom_node.period(site.observe.sample_period, environ.get(sampler.PERIOD_ENV)),
        gateway=site.observe.pushgateway,
    )

    def stop() -> None:
        sampling.set()
        unpublish()

    return stop
