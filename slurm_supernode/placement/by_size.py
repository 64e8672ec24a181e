"""An allocation of a given size on a site, for planning before any job exists.

`snrun plan -S 2` or `snrun plan --nodes 36` answers "how would a job of this size be laid
out?" without a nodelist: the nodes are taken as Slurm gives whole super nodes, in the site's
order, each super node without its spares (what a job asks of it). Pure.
"""

from __future__ import annotations

from slurm_supernode.errors import InputError
from slurm_supernode.hostlist import fold
from slurm_supernode.site.model import Site


def nodes_by_size(site: Site, *, supernodes: int | None = None, nodes: int | None = None) -> str:
    """A hostlist of ``supernodes`` whole super nodes, or of ``nodes`` nodes filling whole super
    nodes first (the last one partly), from the start of the site."""
    usable = [sn.hostnames[: sn.job_size] for sn in site.supernodes]
    if supernodes is not None:
        if supernodes > len(usable):
            raise InputError(
                f"site {site.name} has {len(usable)} super nodes, not {supernodes}",
                where="-S/--supernodes",
                hint=f"at most -S {len(usable)}",
            )
        return fold([h for hosts in usable[:supernodes] for h in hosts])
    assert nodes is not None
    flat = [h for hosts in usable for h in hosts]
    if nodes > len(flat):
        raise InputError(
            f"site {site.name} has {len(flat)} nodes for jobs (spares left out), not {nodes}",
            where="-N/--nodes",
            hint=f"at most -N {len(flat)}",
        )
    return fold(flat[:nodes])
