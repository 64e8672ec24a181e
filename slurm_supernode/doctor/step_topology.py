"""Step 5, topology mapping: do the nodes' PCI layout, NVLink fabric (ClusterUUID), IMEX
channels and device IPs match what the site says."""

from __future__ import annotations

from slurm_supernode.doctor.model import SKIP, DoctorFacts, Finding, NodeFacts, SmiGpu
from slurm_supernode.doctor.verdicts import NEXT_HEALTH, hosts_text
from slurm_supernode.errors import InputError
from slurm_supernode.health.checks import CRITICAL, OK, UNKNOWN, WARNING
from slurm_supernode.site.model import DoctorSettings, Site

# HGX nodes show an all-zero ClusterUUID: the node's own NVSwitch fabric (seen on H200)
ZERO_UUID_NOTE = " (all zero: each node's own NVSwitch fabric, no multi-node NVLink)"


def topology_step(site: Site, facts: DoctorFacts, cfg: DoctorSettings) -> list[Finding]:
    out: list[Finding] = []
    hosts = list(dict.fromkeys(r.host for r in sorted(facts.ranks, key=lambda r: r.rank)))
    rank_map = None
    try:
        from slurm_supernode.placement.rankmap import build_rank_map

        rank_map = build_rank_map(site, hosts, nproc_per_node=facts.nproc_per_node or None)
    except InputError as exc:
        out.append(
            Finding(
                "topology",
                "rank-map",
                CRITICAL,
                str(exc).splitlines()[0],
                expected="the allocation's nodes in the site file",
                next="snrun plan --nodelist ... on these nodes",
            )
        )
    if rank_map is not None:
        passed = [c.name for c in rank_map.checks if c.ok]
        for c in rank_map.checks:
            if not c.ok:
                out.append(
                    Finding(
                        "topology",
                        c.name,
                        WARNING,
                        c.detail,
                        next="snrun plan --nodelist ...: layout and rank order",
                    )
                )
        if passed:
            out.append(
                Finding(
                    "topology",
                    "rank-map",
                    OK,
                    f"{len(passed)} placement checks "
                    f"pass ({', '.join(passed[:4])}{', ...' if len(passed) > 4 else ''})",
                    expected="TP inside a node, groups inside a super node",
                    where=hosts_text(hosts),
                )
            )
        out += _pci_findings(site, facts, rank_map)
    out += _fabric_findings(site, facts)
    out += _imex_findings(site, facts)
    if site.vendor == "ascend":
        out += _device_ip_findings(site, facts)
    return out


def _pci_findings(site: Site, facts: DoctorFacts, rank_map) -> list[Finding]:
    if site.vendor != "nvidia":
        return []
    nodes = {n.host: n for n in facts.nodes}
    checked, bad = [], []
    for r in sorted(facts.ranks, key=lambda x: x.rank):
        placed = rank_map.ranks[r.rank] if r.rank < len(rank_map.ranks) else None
        node = nodes.get(r.host)
        if placed is None or r.device is None or node is None or not node.smi:
            continue
        want = next((g for g in node.smi if g.index == placed.device), None)
        got = next((g for g in node.smi if g.bus_id == r.device.bus_id), None)
        line = f"rank {r.rank} -> GPU {got.index if got else '?'} {r.device.bus_id or '?'}"
        checked.append(line)
        if want is None or r.device.bus_id != want.bus_id:
            bad.append(
                Finding(
                    "topology",
                    "pci-map",
                    CRITICAL,
                    f"{line}; the site's device order puts it on GPU {placed.device}"
                    f" {want.bus_id if want else '(no such GPU)'}",
                    where=r.host,
                    expected=f"device_order {list(site.node(r.host).spec.device_order)}"
                    " (nvidia-smi indices, PCI bus order)",
                    next="CUDA_DEVICE_ORDER=PCI_BUS_ID and CUDA_VISIBLE_DEVICES in the "
                    "job; the site's device_groups vs nvidia-smi topo -m",
                )
            )
    if not checked:
        return [
            Finding(
                "topology",
                "pci-map",
                UNKNOWN,
                "no GPUs: the device of each rank cannot be read, PCI mapping not checked",
                next="run on GPU nodes",
            )
        ]
    if bad:
        return bad
    return [
        Finding(
            "topology",
            "pci-map",
            OK,
            "; ".join(checked[:8]) + (f"; ... ({len(checked)} ranks)" if len(checked) > 8 else ""),
            expected="each rank on the device the site's device order names "
            "(nvidia-smi index, PCI bus id)",
            where=hosts_text(r.host for r in facts.ranks),
        )
    ]


def _fabric_findings(site: Site, facts: DoctorFacts) -> list[Finding]:
    shown = [
        (n, g)
        for n in facts.nodes
        for g in n.smi
        if g.cluster_uuid or (g.fabric_state and g.fabric_state not in ("N/A", "Not Supported"))
    ]
    if not shown:
        return [
            Finding(
                "topology",
                "nvlink-fabric",
                SKIP,
                "nvidia-smi -q shows no NVLink "
                "fabric (ClusterUUID) on these GPUs: no multi-node NVLink",
            )
        ]
    return _fabric_states(shown) + _cluster_uuids(shown)


def _fabric_states(shown: list[tuple[NodeFacts, SmiGpu]]) -> list[Finding]:
    """A GPU whose fabric registration did not complete."""
    out = []
    for n, g in shown:
        if g.fabric_state and g.fabric_state != "Completed":
            out.append(
                Finding(
                    "topology",
                    "nvlink-fabric",
                    CRITICAL,
                    f"GPU {g.index} fabric state {g.fabric_state}",
                    expected="Completed",
                    where=n.host,
                    next="nvidia-smi -q -d FABRIC; fabric manager / NVLink switch trays",
                )
            )
    return out


def _cluster_uuids(shown: list[tuple[NodeFacts, SmiGpu]]) -> list[Finding]:
    """Per super node: one ClusterUUID (one NVLink domain), or the hosts outside the common one."""
    out = []
    by_sn: dict[str, dict[str, set[str]]] = {}
    for n, g in shown:
        by_sn.setdefault(n.supernode, {}).setdefault(g.cluster_uuid or "(none)", set()).add(n.host)
    for sn, uuids in sorted(by_sn.items()):
        if len(uuids) == 1:
            (uuid,) = uuids
            out.append(
                Finding(
                    "topology",
                    "nvlink-fabric",
                    OK,
                    f"{sn}: one ClusterUUID {uuid}"
                    + (ZERO_UUID_NOTE if set(uuid) <= {"0", "-"} else ""),
                    where=hosts_text(uuids[uuid]),
                )
            )
        else:
            common = max(uuids, key=lambda u: len(uuids[u]))
            odd = sorted(h for u, hs in uuids.items() if u != common for h in hs)
            out.append(
                Finding(
                    "topology",
                    "nvlink-fabric",
                    CRITICAL,
                    f"{sn}: {len(uuids)} ClusterUUIDs; {hosts_text(odd)} not in {common}",
                    expected="one NVLink domain per super node",
                    where=hosts_text(odd),
                    next="the site file's super node vs the rack's NVLink domain; "
                    "nvidia-smi -q -d FABRIC on those nodes",
                )
            )
    return out


def _imex_findings(site: Site, facts: DoctorFacts) -> list[Finding]:
    if not site.imex_channels:
        return [Finding("topology", "imex", SKIP, "site has no imex_channels: not needed")]
    items = [(n.host, c) for n in facts.nodes for c in n.health if c.name == "imex"]
    bad = [(h, c) for h, c in items if c.status != OK]
    out = [
        Finding(
            "topology",
            "imex",
            c.status,
            c.message,
            expected="an IMEX channel device",
            where=h,
            next=NEXT_HEALTH["imex"],
        )
        for h, c in bad
    ]
    good = [h for h, c in items if c.status == OK]
    if good:
        out.append(Finding("topology", "imex", OK, "IMEX channel present", where=hosts_text(good)))
    return out


def _device_ip_findings(site: Site, facts: DoctorFacts) -> list[Finding]:
    """HCCL device IPs the node's tools report (``runtime.ascend.read_node_facts``) vs the
    site's ``device_ips``: HCCL routes by these, a wrong one misroutes silently."""
    return [_device_ips(site, n) for n in facts.nodes]


def _device_ips(site: Site, n: NodeFacts) -> Finding:
    """One node's device IPs: unread, different from the site's, partly unread, or as in it."""
    want = site.node(n.host).device_ips if site.has_node(n.host) else ()
    expected = "the site's device_ips: " + ", ".join(want[:4]) + ("..." if len(want) > 4 else "")
    if n.device_ips is None:
        return Finding(
            "topology",
            "hccl-device-ips",
            UNKNOWN,
            f"device IPs not read from the hardware: {n.device_ip_note or '-'}",
            expected=expected,
            where=n.host,
            next="hccn_tool -i N -ip -g on the node (or /etc/hccn.conf)",
        )
    diff = [
        f"device {d}: hardware {hw}, site {w}"
        for d, (hw, w) in enumerate(zip(n.device_ips, want, strict=False))
        if hw and hw != w
    ]
    unread = [str(d) for d, hw in enumerate(n.device_ips) if not hw]
    if diff:
        return Finding(
            "topology",
            "hccl-device-ips",
            CRITICAL,
            "; ".join(diff[:4]),
            expected=expected,
            where=n.host,
            next="fix the site's device_ips (snrun site validate) or the "
            "NPU's address (hccn_tool -i N -ip -s)",
        )
    if unread:
        return Finding(
            "topology",
            "hccl-device-ips",
            UNKNOWN,
            f"no IP read for device(s) {','.join(unread)}: {n.device_ip_note or '-'}",
            expected=expected,
            where=n.host,
            next="hccn_tool -i N -ip -g on the node",
        )
    return Finding(
        "topology",
        "hccl-device-ips",
        OK,
        f"{len(n.device_ips)} device IPs as in the site",
        where=n.host,
    )
