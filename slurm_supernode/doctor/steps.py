"""The six steps' verdicts: pure functions of the gathered facts and the site.

Each step turns facts into ``Finding``s: what was measured, what the site says to expect,
ok / warn / fail (or unknown when it could not be checked, n/a when it does not apply) and
the next thing to check. Slow parts are found by comparing peers (a node, a node pair, a
super node against the median of its kind, the site's ``doctor.slow_pct``); node pairs are
measured in two pairings, so a node slow in both is named rather than the pair (bisection).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

from slurm_supernode.bench.model import GroupResult
from slurm_supernode.doctor.model import (
    SKIP,
    DoctorFacts,
    DoctorReport,
    Finding,
    NodeFacts,
    StorageFacts,
)
from slurm_supernode.errors import InputError
from slurm_supernode.health.checks import CRITICAL, OK, UNKNOWN, WARNING, CheckResult
from slurm_supernode.hostlist import fold
from slurm_supernode.site.model import DoctorSettings, Site

# Bench scope -> the site's link level it measures.
SCOPE_LEVEL = {
    "node": "node",
    "pairs": "supernode",
    "pairs_shift": "supernode",
    "supernode": "supernode",
    "inter": "inter",
}
# HGX nodes show an all-zero ClusterUUID: the node's own NVSwitch fabric (seen on H200)
ZERO_UUID_NOTE = " (all zero: each node's own NVSwitch fabric, no multi-node NVLink)"
NEXT_HEALTH = {
    "devices": "check the device files and gres.conf; nvidia-smi / npu-smi on the node",
    "nvidia-smi": "nvidia-smi -q -d ECC,ROW_REMAPPER; reset or drain the GPU",
    "xid": "dmesg | grep Xid; look the Xid up in NVIDIA's catalogue; drain the node",
    "npu-smi": "npu-smi info -t health -i N on the node",
    "imex": "is nvidia-imex running on the node? ls /dev/nvidia-caps-imex-channels",
}


def _hosts(names: Iterable[str]) -> str:
    names = sorted(set(names))
    try:
        return fold(names)
    except Exception:  # names that are not hostlist-safe: list them
        return ",".join(names)


def _group_hosts(ranks: Sequence[int], host_of: dict[int, str]) -> tuple[str, ...]:
    seen: list[str] = []
    for r in ranks:
        h = host_of.get(r, f"rank{r}")
        if h not in seen:
            seen.append(h)
    return tuple(seen)


def slow_groups(groups: Sequence[GroupResult], slow_pct: float) -> list[GroupResult]:
    """Groups whose busbw is more than ``slow_pct`` % below the median of all groups."""
    if len(groups) < 2:
        return []
    median = statistics.median(g.busbw for g in groups)
    return [g for g in groups if g.busbw < median * (1 - slow_pct / 100)]


def largest(groups: Iterable[GroupResult], scope: str) -> list[GroupResult]:
    """The scope's groups at its largest message size (the one that reaches the link)."""
    mine = [g for g in groups if g.scope == scope]
    if not mine:
        return []
    size = max(g.size for g in mine)
    return sorted((g for g in mine if g.size == size), key=lambda g: g.group)


def _size(n: int) -> str:
    from slurm_supernode.bench.sweep import format_size

    return format_size(n)


# -- 1. device baseline ------------------------------------------------------------------
def device_step(site: Site, facts: DoctorFacts, cfg: DoctorSettings) -> list[Finding]:
    out: list[Finding] = []
    by_check: dict[str, list[tuple[str, CheckResult]]] = {}
    for node in facts.nodes:
        for c in node.health:
            if c.name != "imex":  # topology step
                by_check.setdefault(c.name, []).append((node.host, c))
    for name, items in by_check.items():
        bad = [(h, c) for h, c in items if c.status != OK]
        for host, c in bad:
            out.append(
                Finding(
                    "device",
                    name,
                    c.status,
                    c.message,
                    where=host,
                    next=NEXT_HEALTH.get(name, "snrun health on the node"),
                )
            )
        good = [h for h, c in items if c.status == OK]
        if good:
            sample = next(c for h, c in items if c.status == OK)
            out.append(Finding("device", name, OK, sample.message, where=_hosts(good)))
    out += _driver_findings(site, facts.nodes)
    out += _compute_findings(site, facts, cfg)
    return out


def _driver_findings(site: Site, nodes: Sequence[NodeFacts]) -> list[Finding]:
    if site.vendor != "nvidia":
        return [Finding("device", "runtime", OK, f"torch {nodes[0].torch}" if nodes else "-")]
    no_driver = [n.host for n in nodes if not n.driver and not n.smi]
    if no_driver and len(no_driver) == len(nodes):
        return [
            Finding(
                "device",
                "driver",
                UNKNOWN,
                f"no NVIDIA driver (no /proc/driver/nvidia, no nvidia-smi) on "
                f"{_hosts(no_driver)}: there are no GPUs here; device checks skipped",
                expected=f"site {site.name}: NVIDIA GPUs",
                next="run the doctor on GPU nodes (the local test cluster's devices are fake)",
                where=_hosts(no_driver),
            )
        ]
    stacks: dict[tuple[str, str, str], list[str]] = {}
    for n in nodes:
        drv = n.driver or (n.smi[0].driver if n.smi else "")
        stacks.setdefault((drv or "none", n.torch, n.cuda), []).append(n.host)
    if len(stacks) == 1:
        (drv, torch, cuda), hosts = next(iter(stacks.items()))
        return [
            Finding(
                "device",
                "driver",
                OK,
                f"driver {drv}, torch {torch}, CUDA runtime {cuda or '-'}",
                where=_hosts(hosts),
            )
        ]
    common = max(stacks.items(), key=lambda kv: len(kv[1]))[0]
    out = []
    for stack, hosts in stacks.items():
        if stack != common:
            out.append(
                Finding(
                    "device",
                    "driver",
                    WARNING,
                    f"driver {stack[0]}, torch {stack[1]}, CUDA {stack[2]}",
                    expected=f"the same as the other nodes (driver {common[0]}, "
                    f"torch {common[1]}, CUDA {common[2]})",
                    next="install the same driver and software on every node",
                    where=_hosts(hosts),
                )
            )
    return out


def _compute_findings(site: Site, facts: DoctorFacts, cfg: DoctorSettings) -> list[Finding]:
    devs = [(r, r.device) for r in facts.ranks if r.device is not None]
    expected = (
        f"{cfg.min_tflops:g} TFLOPS bf16 per device"
        if cfg.min_tflops
        else (f"within {cfg.slow_pct:g}% of the other devices")
    )
    if not devs:
        what = (
            "NPUs: no compute check for Ascend yet"
            if site.vendor == "ascend"
            else (f"no GPUs: torch sees no CUDA device on any node (backend {facts.backend})")
        )
        return [
            Finding(
                "device",
                "compute",
                UNKNOWN,
                what + "; compute check skipped",
                expected=expected,
                next="nvidia-smi on a node; is the driver loaded? torch.cuda.is_available()",
            )
        ]
    out = []
    broken = [(r, d) for r, d in devs if d.error or d.tflops is None]
    for r, d in broken:
        out.append(
            Finding(
                "device",
                "compute",
                CRITICAL,
                f"rank {r.rank} (GPU {d.index}): {d.error or 'no figure'}",
                expected=expected,
                where=r.host,
                next="nvidia-smi -q on the node; snrun health --allreduce",
            )
        )
    rates = [(r, d) for r, d in devs if d.tflops is not None and not d.error]
    if not rates:
        return out
    median = statistics.median(d.tflops for _, d in rates)
    low = [
        (r, d)
        for r, d in rates
        if (cfg.min_tflops and d.tflops < cfg.min_tflops)
        or d.tflops < median * (1 - cfg.slow_pct / 100)
    ]
    for r, d in low:
        out.append(
            Finding(
                "device",
                "compute",
                CRITICAL if cfg.min_tflops else WARNING,
                f"rank {r.rank} ({d.name} {d.bus_id}): {d.tflops:.0f} TFLOPS bf16 "
                f"(median {median:.0f})",
                expected=expected,
                where=r.host,
                next="nvidia-smi -q -d CLOCK,PERFORMANCE,TEMPERATURE,POWER: "
                "throttling? dcgmi diag -r 2",
            )
        )
    clocks = sorted(
        {
            f"{g.sm_clock}/{g.max_sm_clock} MHz"
            for n in facts.nodes
            for g in n.smi
            if g.sm_clock is not None
        }
    )
    lo, hi = min(d.tflops for _, d in rates), max(d.tflops for _, d in rates)
    out.append(
        Finding(
            "device",
            "compute",
            OK if not low else WARNING,
            f"{len(rates)} devices: bf16 matmul {lo:.0f}-{hi:.0f} TFLOPS (median "
            f"{median:.0f})" + (f"; SM clocks {', '.join(clocks[:3])}" if clocks else ""),
            expected=expected,
            where=_hosts(r.host for r, _ in rates),
        )
    )
    return out


# -- 2./3. communication -------------------------------------------------------------------
def _scope_findings(
    step: str, scope: str, groups: list[GroupResult], host_of, cfg, what: str
) -> tuple[list[Finding], list[GroupResult]]:
    """Wrong results and slow groups of one scope, plus one summary line."""
    out = []
    for g in groups:
        if g.wrong:
            hosts = _group_hosts(g.ranks, host_of)
            out.append(
                Finding(
                    step,
                    scope,
                    CRITICAL,
                    f"{g.wrong} wrong elements in {g.collective} of {_size(g.size)}",
                    expected="exact sums",
                    where=_hosts(hosts),
                    next="NCCL_DEBUG=INFO; snrun health --allreduce on these nodes",
                )
            )
    slow = slow_groups(groups, cfg.slow_pct)
    busbw = [g.busbw for g in groups]
    summary = (
        f"{len(groups)} {what}: all_reduce {_size(groups[0].size)} busbw "
        f"{min(busbw):.2f}-{max(busbw):.2f} GB/s (median {statistics.median(busbw):.2f})"
    )
    status = OK if not slow and not any(g.wrong for g in groups) else WARNING
    expected = (
        f"no {what[:-1] if what.endswith('s') else what} more than {cfg.slow_pct:g}% "
        "below the median"
    )
    out.append(
        Finding(
            step,
            scope,
            status,
            summary,
            expected=expected,
            where=_hosts(h for g in groups for h in _group_hosts(g.ranks, host_of)),
        )
    )
    return out, slow


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
    out, slow = _scope_findings("intra", "node", groups, host_of, cfg, "nodes")
    med = statistics.median(g.busbw for g in groups)
    for g in slow:
        host = _group_hosts(g.ranks, host_of)[0]
        out.append(
            Finding(
                "intra",
                "node",
                CRITICAL,
                f"{g.busbw:.2f} GB/s busbw inside the node (median of nodes {med:.2f})",
                where=host,
                expected=f"within {cfg.slow_pct:g}% of the median",
                next=f"nvidia-smi topo -m and nvidia-smi nvlink -s on {host}; "
                "snrun health --allreduce there",
            )
        )
    return out


def bisect_pairs(
    plain: Sequence[GroupResult], shifted: Sequence[GroupResult], host_of, slow_pct: float
) -> tuple[list[str], list[tuple[str, ...]]]:
    """(nodes slow in both pairings, slow pairs explained by no such node).

    Every node is in one pair of each pairing; the pairings share no pair. A node whose pairs
    are slow in both is at fault; a pair slow with no such node points at the link (or at a
    node the other pairing could not test, e.g. a super node of two nodes)."""
    slow_a = [_group_hosts(g.ranks, host_of) for g in slow_groups(plain, slow_pct)]
    slow_b = [_group_hosts(g.ranks, host_of) for g in slow_groups(shifted, slow_pct)]
    in_a = {h for pair in slow_a for h in pair}
    in_b = {h for pair in slow_b for h in pair}
    culprits = sorted(in_a & in_b)
    pairs = [p for p in slow_a + slow_b if not set(p) & set(culprits)]
    return culprits, pairs


def cross_step(site: Site, facts: DoctorFacts, cfg: DoctorSettings) -> list[Finding]:
    results = facts.bench.group_results if facts.bench else ()
    host_of = {r.rank: r.host for r in facts.ranks}
    out: list[Finding] = []
    plain, shifted = largest(results, "pairs"), largest(results, "pairs_shift")
    if not plain:
        out.append(Finding("cross", "pairs", SKIP, "one node per super node: no node pairs"))
    else:
        found, _ = _scope_findings("cross", "pairs", plain + shifted, host_of, cfg, "node pairs")
        out += found
        culprits, pairs = bisect_pairs(plain, shifted, host_of, cfg.slow_pct)
        med = statistics.median(g.busbw for g in plain + shifted)
        for host in culprits:
            figures = ", ".join(
                f"{'+'.join(_group_hosts(g.ranks, host_of))} {g.busbw:.2f}"
                for g in plain + shifted
                if host in _group_hosts(g.ranks, host_of)
            )
            out.append(
                Finding(
                    "cross",
                    "slow-node",
                    CRITICAL,
                    f"{host} is slow in both pairings: {figures} GB/s (median of pairs {med:.2f})",
                    where=host,
                    expected=f"within {cfg.slow_pct:g}% of the median",
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
                    expected=f"within {cfg.slow_pct:g}% of the median",
                    next="cables/ports of both nodes; rerun with --nodes on them",
                )
            )
    for scope, what in (("supernode", "super nodes"), ("inter", "cross-super-node groups")):
        groups = largest(results, scope)
        if not groups:
            reason = "one super node" if scope == "inter" else "no super node has two nodes"
            if scope == "supernode" and not plain:
                reason = "super nodes unknown or of one node"
            out.append(Finding("cross", scope, SKIP, f"{reason}: nothing to measure"))
            continue
        found, slow = _scope_findings("cross", scope, groups, host_of, cfg, what)
        out += found
        med = statistics.median(g.busbw for g in groups)
        for g in slow:
            hosts = _group_hosts(g.ranks, host_of)
            sns = sorted({r.supernode for r in facts.ranks if r.rank in g.ranks})
            label = ",".join(sns) if scope == "supernode" else _hosts(hosts)
            out.append(
                Finding(
                    "cross",
                    scope,
                    CRITICAL,
                    f"{label}: {g.busbw:.2f} GB/s busbw (median {med:.2f})",
                    where=label,
                    expected=f"within {cfg.slow_pct:g}% of the median",
                    next="see the slow-node / slow-pair lines; rerun with --nodes on this group",
                )
            )
    return out


# -- 4. bandwidth vs spec -------------------------------------------------------------------
def bandwidth_step(site: Site, facts: DoctorFacts, cfg: DoctorSettings) -> list[Finding]:
    results = facts.bench.group_results if facts.bench else ()
    out = []
    for scope in ("node", "pairs", "inter"):
        groups = largest(results, scope)
        level = SCOPE_LEVEL[scope]
        link = site.links.get(level)
        if not groups or link is None:
            continue
        busbw = statistics.median(g.busbw for g in groups)
        spec = f"links.{level}: {link.bandwidth_GBps:g} GB/s ({link.kind or level})"
        expected = (
            f">= {cfg.bandwidth_warn:g} of {spec} (warn below), >= "
            f"{cfg.bandwidth_fail:g} (fail below)"
        )
        measured = f"{scope}: all_reduce {_size(groups[0].size)} busbw {busbw:.2f} GB/s"
        if facts.backend != "nccl":
            out.append(
                Finding(
                    "bandwidth",
                    level,
                    UNKNOWN,
                    f"{measured} over {facts.backend} "
                    "on CPUs: not comparable with the device links",
                    expected=spec,
                    next="run on GPUs (nccl) to compare with the site's links",
                )
            )
            continue
        ratio = busbw / link.bandwidth_GBps
        status = (
            OK
            if ratio >= cfg.bandwidth_warn
            else (WARNING if ratio >= cfg.bandwidth_fail else CRITICAL)
        )
        out.append(
            Finding(
                "bandwidth",
                level,
                status,
                f"{measured} = {ratio:.2f} of the spec",
                expected=expected,
                next=""
                if status == OK
                else "nccl-tests all_reduce_perf at 1G-4G on "
                "the same nodes; NCCL_DEBUG=INFO (transport, channels); the link "
                "figures in the site file",
            )
        )
    if not out:
        out.append(Finding("bandwidth", "links", SKIP, "no scope measured"))
    return out


# -- 5. topology mapping --------------------------------------------------------------------
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
                    where=_hosts(hosts),
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
            where=_hosts(r.host for r in facts.ranks),
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
                    where=_hosts(uuids[uuid]),
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
                    f"{sn}: {len(uuids)} ClusterUUIDs; {_hosts(odd)} not in {common}",
                    expected="one NVLink domain per super node",
                    where=_hosts(odd),
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
        out.append(Finding("topology", "imex", OK, "IMEX channel present", where=_hosts(good)))
    return out


def _device_ip_findings(site: Site, facts: DoctorFacts) -> list[Finding]:
    """HCCL device IPs the node's tools report (``runtime.ascend.read_node_facts``) vs the
    site's ``device_ips``: HCCL routes by these, a wrong one misroutes silently."""
    out = []
    for n in facts.nodes:
        want = site.node(n.host).device_ips if site.has_node(n.host) else ()
        expected = (
            "the site's device_ips: " + ", ".join(want[:4]) + ("..." if len(want) > 4 else "")
        )
        if n.device_ips is None:
            out.append(
                Finding(
                    "topology",
                    "hccl-device-ips",
                    UNKNOWN,
                    f"device IPs not read from the hardware: {n.device_ip_note or '-'}",
                    expected=expected,
                    where=n.host,
                    next="hccn_tool -i N -ip -g on the node (or /etc/hccn.conf)",
                )
            )
            continue
        diff = [
            f"device {d}: hardware {hw}, site {w}"
            for d, (hw, w) in enumerate(zip(n.device_ips, want, strict=False))
            if hw and hw != w
        ]
        unread = [str(d) for d, hw in enumerate(n.device_ips) if not hw]
        if diff:
            out.append(
                Finding(
                    "topology",
                    "hccl-device-ips",
                    CRITICAL,
                    "; ".join(diff[:4]),
                    expected=expected,
                    where=n.host,
                    next="fix the site's device_ips (snrun site validate) or the "
                    "NPU's address (hccn_tool -i N -ip -s)",
                )
            )
        elif unread:
            out.append(
                Finding(
                    "topology",
                    "hccl-device-ips",
                    UNKNOWN,
                    f"no IP read for device(s) {','.join(unread)}: {n.device_ip_note or '-'}",
                    expected=expected,
                    where=n.host,
                    next="hccn_tool -i N -ip -g on the node",
                )
            )
        else:
            out.append(
                Finding(
                    "topology",
                    "hccl-device-ips",
                    OK,
                    f"{len(n.device_ips)} device IPs as in the site",
                    where=n.host,
                )
            )
    return out


# -- 6. storage --------------------------------------------------------------------------------
def storage_step(site: Site, facts: DoctorFacts, cfg: DoctorSettings) -> list[Finding]:
    out: list[Finding] = []
    by_path: dict[str, list[tuple[str, StorageFacts]]] = {}
    for n in facts.nodes:
        for s in n.storage:
            by_path.setdefault(s.path, []).append((n.host, s))
    if not by_path:
        return [Finding("storage", "storage", SKIP, "no directory tested")]
    floors = (
        f"write >= {cfg.min_write_mbps:g} MB/s, read >= {cfg.min_read_mbps:g} MB/s, "
        f">= {cfg.min_free_gb:g} GB free"
    )
    for path, items in by_path.items():
        ok_items = []
        for host, s in items:
            problems = []
            if s.error:
                problems.append(s.error)
            else:
                if cfg.min_write_mbps and s.write_mbps < cfg.min_write_mbps:
                    problems.append(f"write {s.write_mbps:.0f} MB/s")
                if cfg.min_read_mbps and s.read_mbps < cfg.min_read_mbps:
                    problems.append(f"read {s.read_mbps:.0f} MB/s")
                if cfg.min_free_gb and (s.free_bytes or 0) / 1e9 < cfg.min_free_gb:
                    problems.append(f"{(s.free_bytes or 0) / 1e9:.1f} GB free")
            if problems:
                out.append(
                    Finding(
                        "storage",
                        "storage",
                        CRITICAL,
                        f"{path}: " + ", ".join(problems),
                        expected=floors,
                        where=host,
                        next=f"df -h {path}; the file system's health; another "
                        "checkpoint dir (site doctor.checkpoint_dir)",
                    )
                )
            else:
                ok_items.append((host, s))
        if not ok_items:
            continue
        writes = [s.write_mbps for _, s in ok_items]
        reads = [s.read_mbps for _, s in ok_items]
        slowest = min(ok_items, key=lambda hs: hs[1].write_mbps)
        free = min((s.free_bytes or 0) for _, s in ok_items) / 1e9
        med = statistics.median(writes)
        status = OK
        note = ""
        if len(ok_items) > 1 and slowest[1].write_mbps < med * (1 - cfg.slow_pct / 100):
            status, note = WARNING, f"; slowest writer {slowest[0]}"
        out.append(
            Finding(
                "storage",
                "storage",
                status,
                f"{path}: write {min(writes):.0f}-"
                f"{max(writes):.0f} MB/s, read {min(reads):.0f}-{max(reads):.0f} MB/s"
                f" (page cache dropped), >= {free:.1f} GB free{note}",
                expected=floors,
                where=_hosts(h for h, _ in ok_items),
                next="" if status == OK else f"the disk or mount of {slowest[0]}",
            )
        )
    return out


STEP_FUNCTIONS = (device_step, intra_step, cross_step, bandwidth_step, topology_step, storage_step)


def evaluate(site: Site, facts: DoctorFacts, *, extra: Sequence[Finding] = ()) -> DoctorReport:
    """The whole checklist from the facts (``extra``: the login node's findings)."""
    findings = list(extra)
    for step in STEP_FUNCTIONS:
        findings += step(site, facts, site.doctor)
    order = {
        s: i for i, s in enumerate(("device", "intra", "cross", "bandwidth", "topology", "storage"))
    }
    findings.sort(key=lambda f: order[f.step])
    hosts = tuple(dict.fromkeys(r.host for r in facts.ranks))
    return DoctorReport(
        site=site.name, job_id=facts.job_id, hosts=hosts, findings=tuple(findings), time=facts.time
    )
