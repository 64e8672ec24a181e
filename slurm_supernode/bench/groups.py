"""Which ranks measure together in each scope: pure functions, testable without torch.

Every rank learns its host, node and super node from the environment (``rank_identity``);
rank 0's view of all identities then gives the groups of each scope (``scope_groups``):

- ``node``: the ranks of one node;
- ``supernode``: the ranks of one super node (fast domain: NVLink, HCCS);
- ``inter``: the i-th rank of every super node together (like nccl-tests'
  ``NCCL_TESTS_SPLIT="MOD n"``): only links *between* super nodes are crossed, and all groups
  run at once so every rail is loaded;
- ``world``: everybody;
- ``pairs`` / ``pairs_shift`` (asked for by name only, ``snrun doctor``): the ranks of two
  nodes of one super node, neighbours in physical order; ``pairs_shift`` pairs each node
  with its other neighbour, so a node slow in both pairings is the one at fault.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from slurm_supernode.errors import InputError, JobError
from slurm_supernode.jobenv import JobEnvironment


@dataclass(frozen=True, slots=True)
class RankIdentity:
    """Where one rank runs. ``supernode`` is None when nothing tells it."""

    rank: int
    host: str
    node: str
    supernode: str | None


def supernode_from_topology_addr(addr: str | None, pattern: str | None = None) -> str | None:
    """The switch (tree) or block just above the node in ``SLURM_TOPOLOGY_ADDR``.

    Slurm sets e.g. ``SLURM_TOPOLOGY_ADDR=spine.sn0.node01`` with the pattern
    ``switch.switch.node``; the site's exporters put one leaf switch (or block) per super node,
    so the component before the node names the super node.
    """
    if not addr:
        return None
    parts = addr.split(".")
    kinds = pattern.split(".") if pattern else []
    if kinds and (len(kinds) != len(parts) or kinds[-1] != "node"):
        return None  # a pattern that does not end at the node: not ours to guess
    return (parts[-2] or None) if len(parts) > 1 else None


def rank_identity(
    env: Mapping[str, str], *, supernode_size: int | None = None, host: str | None = None
) -> RankIdentity:
    """This rank's identity from torchrun/Slurm/agent variables (first source that says wins).

    Super node: ``SNRUN_SUPERNODE`` (set by the snrun agent), then ``SLURM_TOPOLOGY_ADDR``,
    then ``supernode_size`` ranks per super node counted from rank 0. Node: torchrun's
    ``GROUP_RANK`` (node rank), else ``SLURM_NODEID``, else the host name.
    """
    try:
        job_env = JobEnvironment.from_environ(env)
    except JobError as exc:
        raise InputError(exc.message, where="environment") from None
    rank = job_env.rank or 0
    host = host or job_env.hostname_override or socket.gethostname()
    node_index = job_env.group_rank if job_env.group_rank is not None else job_env.node_id
    node = f"node{node_index}" if node_index is not None else host
    supernode = job_env.supernode or supernode_from_topology_addr(
        job_env.topology_addr, job_env.topology_addr_pattern
    )
    if not supernode and supernode_size:
        if supernode_size <= 0:
            raise InputError(f"{supernode_size} must be > 0", where="--supernode-size")
        supernode = f"sn{rank // supernode_size}"
    return RankIdentity(rank=rank, host=host, node=node, supernode=supernode or None)


def _by_key(ids: Sequence[RankIdentity], key) -> list[tuple[int, ...]]:
    groups: dict[str, list[int]] = {}
    for ident in sorted(ids, key=lambda i: i.rank):
        groups.setdefault(key(ident), []).append(ident.rank)
    return [tuple(g) for g in groups.values()]


def scope_groups(ids: Sequence[RankIdentity], scope: str) -> tuple[tuple[int, ...], ...]:
    """Disjoint rank groups of a scope, each sorted, in order of their lowest rank.

    Groups of one rank measure nothing and are left out, so an empty result means the
    scope does not apply (one node, one super node, or super nodes unknown).
    """
    if scope == "world":
        groups = [tuple(sorted(i.rank for i in ids))]
    elif scope == "node":
        groups = _by_key(ids, lambda i: i.node)
    elif scope in ("pairs", "pairs_shift"):
        groups = _pair_groups(ids, shift=scope == "pairs_shift")
    elif scope in ("supernode", "inter"):
        if any(i.supernode is None for i in ids):
            return ()
        domains = _by_key(ids, lambda i: i.supernode)
        if scope == "supernode":
            groups = domains
        else:
            width = max(len(d) for d in domains)
            groups = [tuple(d[j] for d in domains if j < len(d)) for j in range(width)]
            groups = [tuple(sorted(g)) for g in groups]
    else:
        raise InputError(f"unknown scope {scope!r}", where="--scopes")
    return tuple(sorted((g for g in groups if len(g) > 1), key=lambda g: g[0]))


def _pair_groups(ids: Sequence[RankIdentity], *, shift: bool) -> list[tuple[int, ...]]:
    """Nodes of each super node (all nodes when unknown) in rank order, paired (0,1),(2,3)...;
    shifted: (1,2),(3,4)...,(last,0), leaving out pairs the plain pairing already has."""
    by_domain: dict[str | None, dict[str, list[int]]] = {}
    for ident in sorted(ids, key=lambda i: i.rank):
        by_domain.setdefault(ident.supernode, {}).setdefault(ident.node, []).append(ident.rank)
    groups = []
    for nodes in by_domain.values():
        order = list(nodes)
        plain = {frozenset(order[i : i + 2]) for i in range(0, len(order) - 1, 2)}
        if shift:
            order = order[1:] + order[:1]
        for i in range(0, len(order) - 1, 2):
            pair = order[i : i + 2]
            if shift and frozenset(pair) in plain:
                continue
            groups.append(tuple(sorted(nodes[pair[0]] + nodes[pair[1]])))
    return groups


def group_of(groups: Sequence[Sequence[int]], rank: int) -> int | None:
    """Index of the group holding ``rank``, or None when the rank sits this scope out."""
    for index, group in enumerate(groups):
        if rank in group:
            return index
    return None


def describe_placement(ids: Sequence[RankIdentity]) -> tuple[str, int, tuple[str, ...]]:
    """(super nodes joined by commas, number of nodes, hosts) for the stored run."""
    supernodes = sorted({i.supernode for i in ids if i.supernode})
    nodes = len({i.node for i in ids})
    hosts = tuple(sorted({i.host for i in ids}))
    return ",".join(supernodes), nodes, hosts
