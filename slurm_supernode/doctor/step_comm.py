"""Steps 2 and 3, communication inside a node and between nodes: wrong results, slow nodes,
pairs and super nodes against their peers; node pairs are measured in two pairings, so a node
slow in both is named rather than the pair (``bisect_pairs``)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from slurm_supernode.bench.model import GroupResult
from slurm_supernode.doctor.model import SKIP, DoctorFacts, Finding
from slurm_supernode.doctor.noise import Noise, RunNoise, run_noise, split_by_noise
from slurm_supernode.doctor.verdicts import (
    group_hosts,
    hosts_text,
    largest,
    peers_median,
    size_text,
    slow_groups,
)
from slurm_supernode.health.checks import CRITICAL, OK, WARNING
from slurm_supernode.site.model import DoctorSettings, Site


def _scope_findings(
    step: str,
    scope: str,
    groups: list[GroupResult],
    host_of,
    cfg,
    what: str,
    label_of=None,
    noisy: RunNoise | None = None,
) -> tuple[list[Finding], list[GroupResult]]:
    """Wrong results and slow groups of one scope, plus one summary line. ``label_of`` names
    a group in the warnings (default: its hosts)."""
    label_of = label_of or (lambda g: hosts_text(group_hosts(g.ranks, host_of)))
    out = []
    for g in groups:
        if g.wrong:
            hosts = group_hosts(g.ranks, host_of)
            out.append(
                Finding(
                    step,
                    scope,
                    CRITICAL,
                    f"{g.wrong} wrong elements in {g.collective} of {size_text(g.size)}",
                    expected="exact sums",
                    where=hosts_text(hosts),
                    next="NCCL_DEBUG=INFO; snrun health --allreduce on these nodes",
                )
            )
    noise = split_by_noise(groups, slow_groups(groups, cfg.slow_pct), cfg.slow_pct, noisy)
    slow = list(noise.beyond)
    busbw = [g.busbw for g in groups]
    summary = (
        f"{len(groups)} {what}: all_reduce {size_text(groups[0].size)} busbw "
        f"{min(busbw):.2f}-{max(busbw):.2f} GB/s (median {statistics.median(busbw):.2f})"
    )
    if noise.repeats > 1:
        summary += f"; {noise.repeats} repeats, spread {noise.spread:.2f} GB/s"
    calm = not slow and not noise.within and not any(g.wrong for g in groups)
    expected = (
        f"no {what[:-1] if what.endswith('s') else what} more than {cfg.slow_pct:g}% "
        "below the median of the others"
    )
    out.append(
        Finding(
            step,
            scope,
            OK if calm else WARNING,
            summary,
            expected=expected,
            where=hosts_text(h for g in groups for h in group_hosts(g.ranks, host_of)),
        )
    )
    out += _noise_findings(step, scope, noise, groups, label_of, cfg, expected)
    return out, slow


def _noise_findings(step, scope, noise: Noise, groups, label_of, cfg, expected: str):
    """A warning per group below its peers that the repeats do not show to be slow."""
    out = []
    for g in noise.within:
        label = label_of(g)
        out.append(
            Finding(
                step,
                scope,
                WARNING,
                f"{label}: {g.busbw:.2f} GB/s busbw (peers' median {_peers_busbw(groups, g):.2f}); "
                + noise.why(g, cfg.slow_pct),
                where=label,
                expected=expected,
                next="rerun snrun doctor (more --iters); a real fault is slow in every repeat",
            )
        )
    return out


def _peers_busbw(groups: Sequence[GroupResult], g: GroupResult) -> float:
    """The median busbw of the groups other than ``g``: what ``g`` is judged against."""
    return peers_median([h.busbw for h in groups], groups.index(g))


def intra_step(site: Site, facts: DoctorFacts, cfg: DoctorSettings) -> list[Finding]:
    groups = largest(facts.bench.group_results if facts.bench else (), "node")
    if not groups:
        return [
            Finding(
                "intra",
                "node",
                SKIP,
                f"{facts.nproc_per_node} process per node: nothing to measure inside a node",
            )
        ]
    host_of = {r.rank: r.host for r in facts.ranks}
    noisy = run_noise(facts.bench.group_results if facts.bench else ())
    out, slow = _scope_findings("intra", "node", groups, host_of, cfg, "nodes", noisy=noisy)
    for g in slow:
        host = group_hosts(g.ranks, host_of)[0]
        out.append(
            Finding(
                "intra",
                "node",
                CRITICAL,
                f"{g.busbw:.2f} GB/s busbw inside the node (median of the other nodes "
                f"{_peers_busbw(groups, g):.2f})",
                where=host,
                expected=f"within {cfg.slow_pct:g}% of the median of its peers",
                next=f"nvidia-smi topo -m and nvidia-smi nvlink -s on {host}; "
                "snrun health --allreduce there",
            )
        )
    return out


def bisect_pairs(
    plain: Sequence[GroupResult],
    shifted: Sequence[GroupResult],
    host_of,
    slow_pct: float,
    noisy: RunNoise | None = None,
) -> tuple[list[str], list[tuple[str, ...]]]:
    """(nodes slow in both pairings, slow pairs explained by no such node).

    Every node is in one pair of each pairing; the pairings share no pair. A node whose pairs
    are slow in both is at fault; a pair slow with no such node points at the link (or at a
    node the other pairing could not test, e.g. a super node of two nodes)."""
    both = [*plain, *shifted]  # one median for both pairings, as the findings show it
    split = split_by_noise(both, slow_groups(both, slow_pct), slow_pct, noisy)
    sure = {id(g) for g in split.beyond}
    slow_a = [group_hosts(g.ranks, host_of) for g in plain if id(g) in sure]
    slow_b = [group_hosts(g.ranks, host_of) for g in shifted if id(g) in sure]
    in_a = {h for pair in slow_a for h in pair}
    in_b = {h for pair in slow_b for h in pair}
    culprits = sorted(in_a & in_b)
    pairs = [p for p in slow_a + slow_b if not set(p) & set(culprits)]
    return culprits, pairs


def cross_step(site: Site, facts: DoctorFacts, cfg: DoctorSettings) -> list[Finding]:
    results = facts.bench.group_results if facts.bench else ()
    host_of = {r.rank: r.host for r in facts.ranks}
    plain, shifted = largest(results, "pairs"), largest(results, "pairs_shift")
    noisy = run_noise(results)
    out = _pair_findings(plain, shifted, host_of, cfg, noisy)
    for scope, what in (("supernode", "super nodes"), ("inter", "cross-super-node groups")):
        groups = largest(results, scope)
        if not groups:
            reason = "one super node" if scope == "inter" else "no super node has two nodes"
            if scope == "supernode" and not plain:
                reason = "super nodes unknown or of one node"
            out.append(Finding("cross", scope, SKIP, f"{reason}: nothing to measure"))
            continue
        out += _group_findings(scope, what, groups, facts, host_of, cfg, noisy)
    return out


def _pair_findings(
    plain: list[GroupResult],
    shifted: list[GroupResult],
    host_of: dict[int, str],
    cfg: DoctorSettings,
    noisy: RunNoise | None = None,
) -> list[Finding]:
    """Node pairs in two pairings: a node slow in both is named, else the pair."""
    if not plain:
        return [Finding("cross", "pairs", SKIP, "one node per super node: no node pairs")]
    out, _ = _scope_findings("cross", "pairs", plain + shifted, host_of, cfg, "node pairs",
                             noisy=noisy)  # fmt: skip
    culprits, pairs = bisect_pairs(plain, shifted, host_of, cfg.slow_pct, noisy)
    med = statistics.median(g.busbw for g in plain + shifted)
    for host in culprits:
        figures = ", ".join(
            f"{'+'.join(group_hosts(g.ranks, host_of))} {g.busbw:.2f}"
            for g in plain + shifted
            if host in group_hosts(g.ranks, host_of)
        )
        out.append(
            Finding(
                "cross",
                "slow-node",
                CRITICAL,
                f"{host} is slow in both pairings: {figures} GB/s (median of pairs {med:.2f})",
                where=host,
                expected=f"within {cfg.slow_pct:g}% of the median of its peers",
                next=f"drain {host} and rerun; on it: snrun health --allreduce, "
                "ibstat / nvidia-smi nvlink -s, dmesg",
            )
        )
    for pair in pairs:
        out.append(
            Finding(
                "cross",
                "slow-pair",
                CRITICAL,
                f"the pair {'+'.join(pair)} is slow in one pairing only: the "
                "link between them, or a node the other pairing did not test",
                where=",".join(pair),
                expected=f"within {cfg.slow_pct:g}% of the median of its peers",
                next="cables/ports of both nodes; rerun with --nodes on them",
            )
        )
    return out


def _group_findings(
    scope: str,
    what: str,
    groups: list[GroupResult],
    facts: DoctorFacts,
    host_of: dict[int, str],
    cfg: DoctorSettings,
    noisy: RunNoise | None = None,
) -> list[Finding]:
    """Super nodes or cross-super-node groups against their peers. Groups of other ranks on
    the same hosts (several ranks per node) that read the same are one line."""
    sn_of = {r.rank: r.supernode for r in facts.ranks}

    def label_of(g: GroupResult) -> str:
        if scope == "supernode":
            return ",".join(sorted({str(sn_of.get(r)) for r in g.ranks}))
        return hosts_text(group_hosts(g.ranks, host_of))

    out, slow = _scope_findings("cross", scope, groups, host_of, cfg, what, label_of, noisy)
    said: set[tuple[str, str]] = set()
    for g in slow:
        label = label_of(g)
        if (label, f"{g.busbw:.2f}") in said:
            continue
        said.add((label, f"{g.busbw:.2f}"))
        out.append(
            Finding(
                "cross",
                scope,
                CRITICAL,
                f"{label}: {g.busbw:.2f} GB/s busbw (peers' median {_peers_busbw(groups, g):.2f})",
                where=label,
                expected=f"within {cfg.slow_pct:g}% of the median of its peers",
                next="see the slow-node / slow-pair lines; rerun with --nodes on this group",
            )
        )
    return out
