"""Ascend HCCL rank tables (``RANK_TABLE_FILE``) from the rank map and the hardware's own values.

Why from the rank map: HCCL's rank_id must equal the torch RANK of the same process, or
collectives silently pair the wrong devices; deriving both from one map makes that true by
construction. Why from the hardware: HCCL interprets ``super_device_id`` (the SDID npu-smi
reports: it decodes the server from it to pick links) and ``device_ip`` (the RoCE address in
``hccn_tool``/``/etc/hccn.conf``); a made-up value parses and then misroutes. So every value
HCCL interprets comes from the node that owns it (``NodeFacts``, read at job start) and the site
is only an override and a cross-check. Without real SDIDs the table is v1.0, never a v1.2 with
invented ones. torch_npu silently ignores a bad table, so it is validated here, against the
rules of HCCL's own parser, before it is written atomically.

Version 1.0: server_list of devices (device_id, device_ip, rank_id). Version 1.2 (SuperPoD)
adds per device super_device_id and ports, per server an optional host_ip, and a top-level
super_pod_list. All values are strings, as in Ascend's own examples.

Files: hccl_facts.py (what a node reads), hccl_format.py (versions, fields, ports),
hccl_validate.py (HCCL's parser rules); this module builds and writes the table.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurm_supernode.errors import InputError, PlacementError
from slurm_supernode.fsutil import write_json_atomic
from slurm_supernode.placement.hccl_facts import DeviceFacts, NodeFacts, decode_sdid
from slurm_supernode.placement.hccl_format import (
    BACKUP_DEVICE_PORT,
    DEVICE_PORT,
    HOST_PORT_BASE,
    VERSIONS,
    one_line,
)
from slurm_supernode.placement.hccl_validate import check_rank_table
from slurm_supernode.placement.model import RankMap, RankPlacement
from slurm_supernode.site.model import Node, Site


@dataclass(frozen=True)
class TablePlan:
    """The rank table to write (``None``: none can be written) and the one-line notes the job
    prints before torchrun starts (value sources, version choice, logical pod ids)."""

    table: dict[str, Any] | None
    version: str | None
    notes: tuple[str, ...] = ()


@dataclass
class _Server:
    node: Node
    server_id: str
    pod: str | None
    devices: list[dict[str, Any]]


def _partner(node: Node, facts: NodeFacts | None, device: int) -> int | None:
    """The other die of the same NPU (the backup NIC HCCL may borrow), or None (odd count)."""
    if facts is not None:
        me = facts.device(device)
        if me.npu_id is not None:
            same = [
                d.device_id
                for d in facts.devices
                if d.npu_id == me.npu_id and d.device_id != device and d.chip_id is not None
            ]
            return same[0] if len(same) == 1 else None
    partner = device ^ 1
    return partner if partner < node.devices else None


def plan_rank_table(
    site: Site,
    rm: RankMap,
    facts: Mapping[str, NodeFacts] | None = None,
    version: str | None = None,
) -> TablePlan:
    """The rank table for ``rm`` from the nodes' ``facts`` (site values as overrides/cross-check).

    ``version`` None chooses: v1.2 when every device has an SDID from npu-smi, else v1.0.
    Raises PlacementError (one line) where site and hardware disagree, where a value HCCL needs
    is missing, or where a v1.2 table would need an SDID nobody read.
    """
    if version is not None and version not in VERSIONS:
        raise InputError(
            f"rank table version {version!r} is not supported",
            where="--rank-table-version",
            hint="one of " + ", ".join(VERSIONS),
        )
    facts = facts or {}
    notes: list[str] = []
    mismatches: list[str] = []
    resolved, missing_ip, from_site = _resolve_ips(site, rm, facts, mismatches)
    pods = _superpods(resolved)
    version = _choose_version(site, facts, resolved, pods, version, notes)
    servers = _servers(site, resolved, pods, version, notes, mismatches)
    if mismatches:
        raise PlacementError(
            one_line("site and hardware disagree", mismatches),
            where=f"site {site.name}",
            hint="fix the site config, or remove the site value to use the hardware's",
        )
    if from_site:
        notes.append(
            one_line(
                "device IPs from the site config, not the hardware, on",
                [f"{h} ({why})" for h, why in from_site.items()],
            )
        )
    _require_ips(servers, version, missing_ip)
    return TablePlan(_emit(servers, version), version, tuple(notes))


# (node, its ranks, device -> IP, what the node read)
_Resolved = list[tuple[Node, list[RankPlacement], dict[int, str | None], NodeFacts | None]]


def _resolve_ips(
    site: Site, rm: RankMap, facts: Mapping[str, NodeFacts], mismatches: list[str]
) -> tuple[_Resolved, list[str], dict[str, str]]:
    """1. Per device: the IP (hardware, else site); site/hardware disagreements go to
    ``mismatches``. Returns the nodes resolved, devices of a rank without an IP, and the hosts
    whose IPs came from the site (with why the hardware gave none)."""
    missing_ip: list[str] = []
    from_site: dict[str, str] = {}  # host -> why the hardware gave no IP
    by_node: dict[int, list[RankPlacement]] = {}
    for r in rm.ranks:
        by_node.setdefault(r.node_rank, []).append(r)
    resolved: _Resolved = []
    for placement in rm.nodes:
        node = site.node(placement.hostname)
        nf = facts.get(node.hostname)
        ranks = by_node.get(placement.node_rank, [])
        wanted = {r.device for r in ranks}
        wanted |= {p for d in list(wanted) if (p := _partner(node, nf, d)) is not None}
        ips: dict[int, str | None] = {}
        for d in sorted(wanted):
            hw = nf.device(d) if nf else DeviceFacts(d)
            site_ip = node.device_ips[d] if d < len(node.device_ips) else None
            if hw.device_ip and site_ip and hw.device_ip != site_ip:
                mismatches.append(
                    f"{node.hostname} device {d} IP: site {site_ip}, hardware {hw.device_ip}"
                    f" ({hw.ip_source or 'hardware'})"
                )
            ips[d] = hw.device_ip or site_ip
            if facts and not hw.device_ip and site_ip:
                from_site.setdefault(node.hostname, (nf.ip_note if nf else None) or "not read")
            if ips[d] is None and any(r.device == d for r in ranks):
                why = (nf.ip_note if nf else None) or "no hardware values read"
                missing_ip.append(f"{node.hostname} device {d} ({why})")
        resolved.append((node, ranks, ips, nf))
    return resolved, missing_ip, from_site


@dataclass
class _Pods:
    """What the nodes' npu-smi says about SuperPoDs."""

    sdid_of: dict[tuple[str, int], int]  # (host, device) -> SDID
    no_sdid: list[str]  # hosts with a rank's device lacking an SDID (and why)
    unsupported: bool  # every such host says it has no SuperPoD
    hw_pod: dict[str, str | None]  # host -> its hardware Super Pod ID (None: unknown)


def _superpods(resolved: _Resolved) -> _Pods:
    """2. SuperPoD membership: the hardware pod per node and each device's SDID; PlacementError
    where a node's own values do not fit together."""
    pods = _Pods({}, [], True, {})
    inconsistent: list[str] = []
    for node, ranks, _, nf in resolved:
        devs = [nf.device(r.device) if nf else DeviceFacts(r.device) for r in ranks]
        for dv in devs:
            if dv.sdid is not None:
                pods.sdid_of[(node.hostname, dv.device_id)] = dv.sdid
        if any(dv.sdid is None for dv in devs):
            pods.no_sdid.append(f"{node.hostname} ({(nf.sdid_note if nf else None) or 'not read'})")
            pods.unsupported = pods.unsupported and bool(nf and nf.sdid_unsupported)
        ids = {dv.super_pod_id for dv in devs if dv.super_pod_id is not None}
        if len(ids) > 1:
            inconsistent.append(f"{node.hostname} devices report Super Pod IDs {sorted(ids)}")
        pods.hw_pod[node.hostname] = next(iter(ids)) if len(ids) == 1 else None
        indexes = {dv.server_index for dv in devs if dv.server_index is not None}
        decoded = {decode_sdid(dv.sdid)[0] for dv in devs if dv.sdid is not None}
        if len(decoded) > 1 or (indexes and decoded and decoded != indexes):
            inconsistent.append(
                f"{node.hostname} SDIDs decode to server index {sorted(decoded)}, npu-smi"
                f" reports Server Index {sorted(indexes)}"
            )
    if inconsistent:
        raise PlacementError(
            one_line("npu-smi values do not fit together", inconsistent),
            where="rank table",
            hint="check npu-smi info -t spod-info on those nodes",
        )
    return pods


def _choose_version(
    site: Site,
    facts: Mapping[str, NodeFacts],
    resolved: _Resolved,
    pods: _Pods,
    version: str | None,
    notes: list[str],
) -> str:
    """The table's version: the one asked for if the SDIDs allow it, else v1.2 when every
    device has an SDID, v1.0 when none has and the site needs none; PlacementError otherwise."""
    no_sdid = pods.no_sdid
    if version is None:
        site_pods = any(sn.super_pod_id is not None for sn in site.supernodes)
        if not no_sdid:
            return "1.2"
        if len(no_sdid) < len(resolved) and pods.sdid_of:
            raise PlacementError(
                one_line("SDIDs read on some nodes but not on", no_sdid),
                where="rank table",
                hint="every node of a SuperPoD job needs npu-smi spod-info",
            )
        if site_pods and not pods.unsupported:
            raise PlacementError(
                one_line("no SDIDs for the site's SuperPoDs (super_pod_id set)", no_sdid),
                where="rank table v1.2",
                hint="put npu-smi (Ascend driver tools) on the nodes' PATH; snrun never invents"
                " super_device_id",
            )
        if no_sdid and pods.sdid_of == {} and facts:
            notes.append(one_line("rank table v1.0 (no SuperPoD SDIDs)", no_sdid))
        return "1.0"
    if version == "1.2" and no_sdid:
        raise PlacementError(
            one_line("needs the SDID npu-smi reports for every device", no_sdid),
            where="rank table v1.2",
            hint="SDIDs exist only on the nodes: jobs read them at start (snrun plan writes v1.0)",
        )
    return version


def _servers(
    site: Site,
    resolved: _Resolved,
    pods: _Pods,
    version: str,
    notes: list[str],
    mismatches: list[str],
) -> list[_Server]:
    """3. The servers and their devices in rank order; the pod id of each (the site's
    super_pod_id as a logical override, noted); super nodes or pod ids that would span or merge
    hardware SuperPoDs go to ``mismatches``."""
    sn_ordinal = {sn.name: i for i, sn in enumerate(site.supernodes)}
    servers: list[_Server] = []
    label_hw: dict[str, dict[str | None, str]] = {}  # table pod id -> hw pod -> first host
    sn_hw: dict[str, dict[str | None, str]] = {}
    for node, ranks, ips, nf in resolved:
        sn = site.supernode(node.supernode)
        pod: str | None = None
        if version == "1.2":
            hw = pods.hw_pod[node.hostname]
            sn_hw.setdefault(sn.name, {}).setdefault(hw, node.hostname)
            if sn.super_pod_id is not None:
                pod = str(sn.super_pod_id)
                if hw is not None and pod != hw:
                    note = f"{sn.name}: site super_pod_id {pod} used as a logical SuperPoD id"
                    note += f" (hardware Super Pod ID {hw})"
                    if note not in notes:
                        notes.append(note)
            else:
                pod = hw if hw is not None else str(sn_ordinal[sn.name])
            label_hw.setdefault(pod, {}).setdefault(hw, node.hostname)
        servers.append(_Server(node, node.host_ip or node.hostname, pod, []))
        for r in ranks:
            servers[-1].devices.append(_device_entry(node, nf, r, ips, pods, version))
    for sn_name, hws in sn_hw.items():
        if len(hws) > 1 and None not in hws:
            shown = ", ".join(f"{h} in {p}" for p, h in hws.items())
            mismatches.append(f"super node {sn_name} spans hardware SuperPoDs ({shown})")
    for pod, hws in label_hw.items():
        if len(hws) > 1 and None not in hws:
            shown = ", ".join(f"{h} in {p}" for p, h in hws.items())
            mismatches.append(f"super_pod_id {pod} would merge hardware SuperPoDs ({shown})")
    return servers


def _device_entry(
    node: Node,
    nf: NodeFacts | None,
    r: RankPlacement,
    ips: dict[int, str | None],
    pods: _Pods,
    version: str,
) -> dict[str, str]:
    """One rank's device in the table, its fields in HCCL's order."""
    dev: dict[str, str] = {"device_id": str(r.device)}
    if version == "1.2":
        dev["super_device_id"] = str(pods.sdid_of[(node.hostname, r.device)])
    if ips.get(r.device):
        dev["device_ip"] = str(ips[r.device])
    if version == "1.2":
        dev["device_port"] = str(DEVICE_PORT)
        partner = _partner(node, nf, r.device)
        if partner is not None and ips.get(partner) and "device_ip" in dev:
            dev["backup_device_ip"] = str(ips[partner])
            dev["backup_device_port"] = str(BACKUP_DEVICE_PORT)
        dev["host_port"] = str(HOST_PORT_BASE + r.device)
    dev["rank_id"] = str(r.rank)
    return dev


def _require_ips(servers: list[_Server], version: str, missing_ip: list[str]) -> None:
    """Device IPs are needed with more than one server (v1.0, or servers in several pods):
    PlacementError when some are missing; otherwise HCCL wants them on every device or on
    none, so a partial set is dropped."""
    pods_in_job = {s.pod for s in servers}
    need_ip = len(servers) > 1 and (version == "1.0" or len(pods_in_job) > 1)
    if missing_ip and need_ip:
        raise PlacementError(
            one_line("no device IP", missing_ip),
            where="rank table",
            hint="HCCL needs device_ip with more than one server: hccn_tool (or /etc/hccn.conf)"
            " on every node, or device_ips in the site config",
        )
    if missing_ip:  # optional here, but HCCL wants it on every device or on none
        for s in servers:
            for dev in s.devices:
                for key in ("device_ip", "backup_device_ip", "backup_device_port"):
                    dev.pop(key, None)


def _emit(servers: list[_Server], version: str) -> dict[str, Any]:
    out_servers = []
    pods: dict[str, list[str]] = {}
    for s in servers:
        server: dict[str, Any] = {"server_id": s.server_id}
        if version == "1.2" and s.node.host_ip:
            server["host_ip"] = s.node.host_ip  # optional for HCCL: only a real one
        server["device"] = s.devices
        if version == "1.0":
            server["host_nic_ip"] = "reserve"
        out_servers.append(server)
        if version == "1.2":
            pods.setdefault(str(s.pod), []).append(s.server_id)
    table: dict[str, Any] = {
        "status": "completed",
        "version": version,
        "server_count": str(len(out_servers)),
        "server_list": out_servers,
    }
    if version == "1.2":
        table["super_pod_list"] = [
            {"super_pod_id": pid, "server_list": [{"server_id": s} for s in ids]}
            for pid, ids in pods.items()
        ]
    return table


def build_rank_table(
    site: Site,
    rm: RankMap,
    version: str = "1.0",
    facts: Mapping[str, NodeFacts] | None = None,
) -> dict[str, Any]:
    """The rank table of ``rm`` in ``version`` (servers in node-rank order, devices in
    local-rank order). v1.2 needs ``facts`` with SDIDs: none is ever made up."""
    if version not in VERSIONS:
        raise InputError(
            f"rank table version {version!r} is not supported",
            where="--rank-table-version",
            hint="one of " + ", ".join(VERSIONS),
        )
    table = plan_rank_table(site, rm, facts, version).table
    assert table is not None
    return table


def write_rank_table(
    site: Site,
    rm: RankMap,
    path: str | os.PathLike[str],
    version: str = "1.0",
    facts: Mapping[str, NodeFacts] | None = None,
) -> Path:
    """Build, validate, then atomically write the rank table; PlacementError if invalid."""
    table = build_rank_table(site, rm, version, facts)
    check_rank_table(table, str(path))
    return write_json_atomic(path, table)
