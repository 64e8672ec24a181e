"""Site objects built in code for placement tests and the planner bench.

Why not YAML: the placement layer must be testable on its own, and the bench needs sites of
100,000 devices that would be silly to keep as files. Builders mirror the three shapes the
project targets: generic islands, NVL72-like (18 nodes x 4 GPUs), Ascend-like (16 NPUs).
"""

from __future__ import annotations

from collections.abc import Callable

from slurm_supernode.site.model import LinkLevel, Node, NodeSpec, Site, SuperNode

Namer = Callable[[int, int, int], str]  # (super node ordinal, node index, global index) -> host


def default_links(
    node: float = 450.0, supernode: float = 450.0, inter: float = 50.0, latency_us: float = 0.0
) -> dict[str, LinkLevel]:
    return {
        "node": LinkLevel("node", node, latency_us, "nvlink"),
        "supernode": LinkLevel("supernode", supernode, latency_us, "nvlink"),
        "inter": LinkLevel("inter", inter, latency_us, "infiniband"),
    }


def interleaved_groups(devices: int, groups: int) -> tuple[tuple[int, ...], ...]:
    """Islands that are NOT contiguous (0,2,4,.. / 1,3,5,..) so device order matters."""
    return tuple(tuple(range(g, devices, groups)) for g in range(groups))


def make_site(
    supernodes: int = 2,
    nodes_per_sn: int = 4,
    devices: int = 8,
    groups: int = 1,
    *,
    name: str = "test",
    vendor: str = "nvidia",
    links: dict[str, LinkLevel] | None = None,
    namer: Namer | None = None,
    device_groups: tuple[tuple[int, ...], ...] | None = None,
    with_ips: bool = False,
) -> Site:
    """``supernodes`` x ``nodes_per_sn`` nodes of ``devices`` devices in ``groups`` islands."""
    spec = NodeSpec(
        devices=devices,
        device_groups=device_groups or interleaved_groups(devices, groups),
    )
    namer = namer or (lambda s, i, g: f"n{g:0{len(str(supernodes * nodes_per_sn - 1))}d}")
    sns = []
    g = 0
    for s in range(supernodes):
        sn_name = f"sn{s:02d}"
        nodes = []
        for i in range(nodes_per_sn):
            ips: tuple[str, ...] = ()
            host_ip = None
            if with_ips:
                ips = tuple(f"10.{s}.{i}.{d + 1}" for d in range(devices))
                host_ip = f"172.16.{s}.{i + 1}"
            nodes.append(Node(namer(s, i, g), sn_name, i, spec, device_ips=ips, host_ip=host_ip))
            g += 1
        sns.append(SuperNode(sn_name, tuple(nodes), feature=sn_name, super_pod_id=s))
    return Site(name=name, vendor=vendor, supernodes=tuple(sns), links=links or default_links())


def nvl72_site(supernodes: int = 2, **kw) -> Site:
    """GB200 NVL72-like: 18 trays of 4 GPUs per super node, one NVLink island per node."""
    links = kw.pop("links", None) or default_links(node=900, supernode=900, inter=50)
    return make_site(supernodes, 18, 4, 1, links=links, **kw)


def ascend_site(supernodes: int = 2, nodes_per_sn: int = 4, **kw) -> Site:
    """Ascend A3-like: 16 NPUs per node (two islands of 8), device and host IPs, SuperPoD ids."""
    links = kw.pop("links", None) or default_links(node=196, supernode=196, inter=25)
    return make_site(
        supernodes,
        nodes_per_sn,
        16,
        links=links,
        vendor="ascend",
        device_groups=(tuple(range(8)), tuple(range(8, 16))),
        with_ips=True,
        **kw,
    )


def reversed_names(supernodes: int, nodes_per_sn: int) -> Namer:
    """Hostnames whose alphabetical order interleaves super nodes (Slurm order != physical)."""
    total = supernodes * nodes_per_sn
    width = len(str(total - 1))
    return lambda s, i, g: f"h{(i * supernodes + s):0{width}d}"
