"""What the doctor's steps share: host lists for a finding's ``where``, the peer comparison
(``slow_groups``: more than ``slow_pct`` % below the median of its peers; ``largest``: the
message size that reaches the link) and the next check after a failed health check."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from slurm_supernode.bench.model import GroupResult
from slurm_supernode.hostlist import fold
from slurm_supernode.observe.peers import below_peers as below_peers
from slurm_supernode.observe.peers import peers_median as peers_median

NEXT_HEALTH = {
    "devices": "check the device files and gres.conf; nvidia-smi / npu-smi on the node",
    "nvidia-smi": "nvidia-smi -q -d ECC,ROW_REMAPPER; reset or drain the GPU",
    "xid": "dmesg | grep Xid; look the Xid up in NVIDIA's catalogue; drain the node",
    "npu-smi": "npu-smi info -t health -i N on the node",
    "imex": "is nvidia-imex running on the node? ls /dev/nvidia-caps-imex-channels",
}


def hosts_text(names: Iterable[str]) -> str:
    names = sorted(set(names))
    try:
        return fold(names)
    except Exception:  # names that are not hostlist-safe: list them
        return ",".join(names)


def group_hosts(ranks: Sequence[int], host_of: dict[int, str]) -> tuple[str, ...]:
    seen: list[str] = []
    for r in ranks:
        h = host_of.get(r, f"rank{r}")
        if h not in seen:
            seen.append(h)
    return tuple(seen)


def slow_groups(groups: Sequence[GroupResult], slow_pct: float) -> list[GroupResult]:
    """Groups whose busbw is more than ``slow_pct`` % below the median of the other groups."""
    return [groups[i] for i in below_peers([g.busbw for g in groups], slow_pct)]


def largest(groups: Iterable[GroupResult], scope: str) -> list[GroupResult]:
    """The scope's groups at its largest message size (the one that reaches the link)."""
    mine = [g for g in groups if g.scope == scope]
    if not mine:
        return []
    size = max(g.size for g in mine)
    return sorted((g for g in mine if g.size == size), key=lambda g: g.group)


def size_text(n: int) -> str:
    from slurm_supernode.bench.measure_options import format_size

    return format_size(n)
