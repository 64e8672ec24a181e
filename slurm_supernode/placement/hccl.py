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
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from slurm_supernode.errors import InputError, PlacementError
from slurm_supernode.fsutil import write_json_atomic
from slurm_supernode.placement.model import RankMap
from slurm_supernode.site.model import Node, Site

VERSIONS = ("1.0", "1.2")
DEVICE_PORT = 16666  # HCCL's default device NIC port
BACKUP_DEVICE_PORT = 16667  # HCCL's default backup port (must differ from the partner's port)
# host_port = base + device id: unique per host, and two jobs on disjoint devices of one host
# (each with its own table) can never pick the same port.
HOST_PORT_BASE = 16665
MAX_SERVER_ID = 64  # HCCL: server_id is at most 64 characters
SHOWN = 4  # problems shown in a one-line error before "(+N more)"

V10_DEVICE = ("device_id", "device_ip", "rank_id")
V12_DEVICE = (
    "device_id",
    "super_device_id",
    "device_ip",
    "device_port",
    "backup_device_ip",
    "backup_device_port",
    "host_port",
    "rank_id",
)


# -- what a node reads about itself (filled by slurm_supernode.runtime.ascend) ---------------
@dataclass(frozen=True, slots=True)
class DeviceFacts:
    """One device as its node's tools report it. ``None``: the tool gave nothing."""

    device_id: int  # physical id: /dev/davinciN, hccn_tool -i N, rank table device_id
    npu_id: int | None = None  # npu-smi -i (card) and -c (chip) of this device
    chip_id: int | None = None
    device_ip: str | None = None
    ip_source: str | None = None  # "hccn_tool" or the hccn.conf path
    sdid: int | None = None  # npu-smi spod-info "SDID"
    super_pod_id: str | None = None  # npu-smi spod-info "Super Pod ID"
    server_index: int | None = None  # npu-smi spod-info "Server Index"


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """Everything one node read at job start, plus why something could not be read."""

    hostname: str
    devices: tuple[DeviceFacts, ...] = ()
    # Why there are no SDIDs: "npu-smi not found", "... does not support querying spod-info".
    sdid_note: str | None = None
    sdid_unsupported: bool = False  # the device says it has no SuperPoD (e.g. Atlas A2)
    ip_note: str | None = None  # why device IPs are missing (no hccn_tool, no hccn.conf)
    _by_id: dict[int, DeviceFacts] = field(
        init=False, default_factory=dict, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {d.device_id: d for d in self.devices})

    def device(self, device_id: int) -> DeviceFacts:
        return self._by_id.get(device_id) or DeviceFacts(device_id)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("_by_id", None)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodeFacts:
        devices = tuple(DeviceFacts(**d) for d in data.get("devices") or ())
        keep = {k: data[k] for k in ("sdid_note", "sdid_unsupported", "ip_note") if k in data}
        return cls(hostname=data["hostname"], devices=devices, **keep)


def decode_sdid(sdid: int) -> tuple[int, int, int, int]:
    """(server index, chip id, die id, device id) of an SDID (Ascend DCMI bit layout: 22-31
    server index, 18-21 chip, 16-17 die, 0-15 device = chip x 2 + die)."""
    return (sdid >> 22) & 0x3FF, (sdid >> 18) & 0xF, (sdid >> 16) & 0x3, sdid & 0xFFFF


@dataclass(frozen=True)
class TablePlan:
    """The rank table to write (``None``: none can be written) and the one-line notes the job
    prints before torchrun starts (value sources, version choice, logical pod ids)."""

    table: dict | None
    version: str | None
    notes: tuple[str, ...] = ()


# -- building ------------------------------------------------------------------------------
@dataclass
class _Server:
    node: Node
    server_id: str
    pod: str | None
    devices: list[dict]


def _one_line(what: str, items: list[str]) -> str:
    more = f" (+{len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return f"{what}: " + "; ".join(items[:SHOWN]) + more


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
    missing_ip: list[str] = []
    from_site: dict[str, str] = {}  # host -> why the hardware gave no IP
    by_node: dict[int, list] = {}
    for r in rm.ranks:
        by_node.setdefault(r.node_rank, []).append(r)
    sn_ordinal = {sn.name: i for i, sn in enumerate(site.supernodes)}

    # 1. per device: IP (hardware, else site) and SDID (hardware only)
    resolved: list[tuple[Node, list, dict[int, str | None], NodeFacts | None]] = []
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

    # 2. SuperPoD membership: hardware pod per node, site super_pod_id as a logical override
    sdid_of: dict[tuple[str, int], int] = {}
    inconsistent: list[str] = []
    no_sdid: list[str] = []
    unsupported = True
    hw_pod: dict[str, str | None] = {}
    for node, ranks, _, nf in resolved:
        devs = [nf.device(r.device) if nf else DeviceFacts(r.device) for r in ranks]
        for dv in devs:
            if dv.sdid is not None:
                sdid_of[(node.hostname, dv.device_id)] = dv.sdid
        if any(dv.sdid is None for dv in devs):
            no_sdid.append(f"{node.hostname} ({(nf.sdid_note if nf else None) or 'not read'})")
            unsupported = unsupported and bool(nf and nf.sdid_unsupported)
        pods = {dv.super_pod_id for dv in devs if dv.super_pod_id is not None}
        if len(pods) > 1:
            inconsistent.append(f"{node.hostname} devices report Super Pod IDs {sorted(pods)}")
        hw_pod[node.hostname] = next(iter(pods)) if len(pods) == 1 else None
        indexes = {dv.server_index for dv in devs if dv.server_index is not None}
        decoded = {decode_sdid(dv.sdid)[0] for dv in devs if dv.sdid is not None}
        if len(decoded) > 1 or (indexes and decoded and decoded != indexes):
            inconsistent.append(
                f"{node.hostname} SDIDs decode to server index {sorted(decoded)}, npu-smi"
                f" reports Server Index {sorted(indexes)}"
            )
    if inconsistent:
        raise PlacementError(
            _one_line("npu-smi values do not fit together", inconsistent),
            where="rank table",
            hint="check npu-smi info -t spod-info on those nodes",
        )
    site_pods = any(sn.super_pod_id is not None for sn in site.supernodes)
    if version is None:
        if not no_sdid:
            version = "1.2"
        elif len(no_sdid) < len(resolved) and sdid_of:
            raise PlacementError(
                _one_line("SDIDs read on some nodes but not on", no_sdid),
                where="rank table",
                hint="every node of a SuperPoD job needs npu-smi spod-info",
            )
        elif site_pods and not unsupported:
            raise PlacementError(
                _one_line("no SDIDs for the site's SuperPoDs (super_pod_id set)", no_sdid),
                where="rank table v1.2",
                hint="put npu-smi (Ascend driver tools) on the nodes' PATH; snrun never invents"
                " super_device_id",
            )
        else:
            version = "1.0"
            if no_sdid and sdid_of == {} and facts:
                notes.append(_one_line("rank table v1.0 (no SuperPoD SDIDs)", no_sdid))
    elif version == "1.2" and no_sdid:
        raise PlacementError(
            _one_line("needs the SDID npu-smi reports for every device", no_sdid),
            where="rank table v1.2",
            hint="SDIDs exist only on the nodes: jobs read them at start (snrun plan writes v1.0)",
        )

    servers: list[_Server] = []
    label_hw: dict[str, dict[str | None, str]] = {}  # table pod id -> hw pod -> first host
    sn_hw: dict[str, dict[str | None, str]] = {}
    for node, ranks, ips, nf in resolved:
        sn = site.supernode(node.supernode)
        pod: str | None = None
        if version == "1.2":
            hw = hw_pod[node.hostname]
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
            dev: dict[str, str] = {"device_id": str(r.device)}
            if version == "1.2":
                dev["super_device_id"] = str(sdid_of[(node.hostname, r.device)])
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
            servers[-1].devices.append(dev)
    for sn_name, hws in sn_hw.items():
        if len(hws) > 1 and None not in hws:
            shown = ", ".join(f"{h} in {p}" for p, h in hws.items())
            mismatches.append(f"super node {sn_name} spans hardware SuperPoDs ({shown})")
    for pod, hws in label_hw.items():
        if len(hws) > 1 and None not in hws:
            shown = ", ".join(f"{h} in {p}" for p, h in hws.items())
            mismatches.append(f"super_pod_id {pod} would merge hardware SuperPoDs ({shown})")
    if mismatches:
        raise PlacementError(
            _one_line("site and hardware disagree", mismatches),
            where=f"site {site.name}",
            hint="fix the site config, or remove the site value to use the hardware's",
        )
    if from_site:
        notes.append(
            _one_line(
                "device IPs from the site config, not the hardware, on",
                [f"{h} ({why})" for h, why in from_site.items()],
            )
        )
    pods_in_job = {s.pod for s in servers}
    need_ip = len(servers) > 1 and (version == "1.0" or len(pods_in_job) > 1)
    if missing_ip and need_ip:
        raise PlacementError(
            _one_line("no device IP", missing_ip),
            where="rank table",
            hint="HCCL needs device_ip with more than one server: hccn_tool (or /etc/hccn.conf)"
            " on every node, or device_ips in the site config",
        )
    if missing_ip:  # optional here, but HCCL wants it on every device or on none
        for s in servers:
            for dev in s.devices:
                for key in ("device_ip", "backup_device_ip", "backup_device_port"):
                    dev.pop(key, None)
    return TablePlan(_emit(servers, version), version, tuple(notes))


def _emit(servers: list[_Server], version: str) -> dict:
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
) -> dict:
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


# -- validation: HCCL's parser rules ---------------------------------------------------------
def _uint(value: Any) -> int | None:
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _ip_ok(value: Any) -> bool:
    try:
        ipaddress.ip_address(value)
    except (ValueError, TypeError):
        return False
    return True


def _port_problem(value: Any) -> str | None:
    port = _uint(value)
    if port is None:
        return f"{value!r} is not a decimal port"
    if port == 0 or port > 65535:
        return f"{port} is outside 1-65535"
    if port < 1024:
        return f"{port} is a system port (1-1023)"
    return None


def validate_rank_table(table: Mapping[str, Any]) -> list[str]:
    """Every problem found (empty when valid), by the rules of HCCL's rank table parser and
    its documentation (see tests/data/ascend/SOURCES.md for the list and its sources)."""
    problems: list[str] = []
    version = table.get("version")
    if version not in VERSIONS:
        return [f"version {version!r} is not one of {', '.join(VERSIONS)}"]
    if table.get("status") != "completed":
        problems.append("status must be 'completed'")
    servers = table.get("server_list")
    if not isinstance(servers, list) or not servers:
        return [*problems, "server_list missing or empty"]
    count = table.get("server_count")
    if count is None and version == "1.0":
        problems.append("server_count missing (mandatory in v1.0)")
    elif count is not None and count != str(len(servers)):
        problems.append(f"server_count {count!r} != {len(servers)} servers")
    v12 = version == "1.2"
    device_ips: dict[str, str] = {}
    backup_ips: dict[str, str] = {}
    rank_ids: list[int] = []
    rank_server: dict[int, int] = {}
    server_ids: list[str] = []
    with_ip = without_ip = 0
    ports_of: dict[tuple[int, str], str] = {}  # (server, device ip) -> device_port
    backups: list[tuple[str, int, str, str | None]] = []  # where, server, backup ip, port
    sdid_by_server: dict[str, list[tuple[str, int]]] = {}
    for i, server in enumerate(servers):
        sid = server.get("server_id")
        if not isinstance(sid, str) or not sid:
            problems.append(f"server_list[{i}]: server_id missing")
            sid = f"#{i}"
        elif len(sid) > MAX_SERVER_ID:
            problems.append(f"server {sid}: server_id longer than {MAX_SERVER_ID} characters")
        server_ids.append(sid)
        host_ip = server.get("host_ip")
        if host_ip is not None and not _ip_ok(host_ip):
            problems.append(f"server {sid}: host_ip {host_ip!r} is not an IP address")
        devices = server.get("device")
        if not isinstance(devices, list) or not devices:
            problems.append(f"server {sid}: device list missing or empty")
            continue
        dev_ids: set[int] = set()
        host_ports: dict[str, str] = {}
        for j, dev in enumerate(devices):
            where = f"server {sid} device[{j}]"
            required = ["device_id", "rank_id"] + (["super_device_id"] if v12 else [])
            for f in required:
                if dev.get(f) in (None, ""):
                    problems.append(f"{where}: {f} missing")
            did = _uint(dev.get("device_id"))
            if dev.get("device_id") not in (None, "") and did is None:
                problems.append(f"{where}: device_id {dev.get('device_id')!r} is not a decimal")
            elif did is not None:
                if did in dev_ids:
                    problems.append(f"{where}: device_id {did} twice on one server")
                dev_ids.add(did)
            ip = dev.get("device_ip")
            if ip in (None, ""):
                without_ip += 1
            else:
                with_ip += 1
                if not _ip_ok(ip):
                    problems.append(f"{where}: device_ip {ip!r} is not an IP address")
                elif ip in device_ips:
                    problems.append(f"{where}: device_ip {ip} also used by {device_ips[ip]}")
                else:
                    device_ips[ip] = where
                    ports_of[(i, ip)] = dev.get("device_port") or str(DEVICE_PORT)
            for key in ("device_port", "backup_device_port", "host_port"):
                if key in dev and (why := _port_problem(dev[key])):
                    problems.append(f"{where}: {key} {why}")
            hp = dev.get("host_port")
            if hp is not None:
                if hp in host_ports:
                    problems.append(f"{where}: host_port {hp} also used by {host_ports[hp]}")
                host_ports.setdefault(hp, where)
            bip = dev.get("backup_device_ip")
            if bip not in (None, ""):
                if not _ip_ok(bip):
                    problems.append(f"{where}: backup_device_ip {bip!r} is not an IP address")
                elif bip == ip:
                    problems.append(f"{where}: backup_device_ip is the device's own IP")
                elif bip in backup_ips:
                    problems.append(
                        f"{where}: backup_device_ip {bip} also used by {backup_ips[bip]}"
                    )
                else:
                    backup_ips[bip] = where
                    backups.append((where, i, bip, dev.get("backup_device_port")))
            rid = _uint(dev.get("rank_id"))
            if rid is None:
                if dev.get("rank_id") not in (None, ""):
                    problems.append(f"{where}: rank_id {dev.get('rank_id')!r} is not an integer")
            else:
                rank_ids.append(rid)
                rank_server[rid] = i
            if v12 and dev.get("super_device_id") not in (None, ""):
                sd = _uint(dev.get("super_device_id"))
                if sd is None or sd > 0xFFFFFFFF:
                    problems.append(
                        f"{where}: super_device_id {dev.get('super_device_id')!r} is not a u32"
                    )
                else:
                    sdid_by_server.setdefault(sid, []).append((where, sd))
    if sorted(rank_ids) != list(range(len(rank_ids))):
        problems.append(f"rank_id values are not exactly 0..{len(rank_ids) - 1}")
    else:
        order = [rank_server[r] for r in range(len(rank_ids))]
        blocks = [s for k, s in enumerate(order) if k == 0 or order[k - 1] != s]
        if len(blocks) != len(set(blocks)):
            problems.append(
                "rank_id values interleave across servers (each server needs one block)"
            )
    if len(set(server_ids)) != len(server_ids):
        problems.append("server_id values are not unique")
    if with_ip and without_ip:
        problems.append("device_ip set on some devices but not on others")
    if without_ip and len(servers) > 1 and not v12:
        problems.append("device_ip missing: required with more than one server")
    for where, i, bip, bport in backups:
        owner = device_ips.get(bip)
        if owner is None:
            continue  # HCCL only warns: the backup die is outside this table
        if not owner.startswith(f"server {server_ids[i]} device["):
            problems.append(f"{where}: backup_device_ip {bip} belongs to {owner} (other server)")
        elif bport is not None and bport == ports_of.get((i, bip)):
            problems.append(
                f"{where}: backup_device_port {bport} equals the device_port of {owner}"
            )
    if v12:
        problems += _validate_pods(table, servers, server_ids, sdid_by_server, bool(without_ip))
    return problems


def _validate_pods(
    table: Mapping[str, Any],
    servers: list,
    server_ids: list[str],
    sdid_by_server: dict[str, list[tuple[str, int]]],
    missing_ip: bool,
) -> list[str]:
    problems: list[str] = []
    pods = table.get("super_pod_list")
    if not isinstance(pods, list) or not pods:
        return ["super_pod_list missing or empty (v1.2)"]
    pod_of: dict[str, str] = {}
    seen_pods: set[str] = set()
    for k, pod in enumerate(pods):
        pid = pod.get("super_pod_id")
        if not isinstance(pid, str) or not pid:
            problems.append(f"super_pod_list[{k}]: super_pod_id missing")
            continue
        if pid in seen_pods:
            problems.append(f"super_pod_id {pid} listed twice")
        seen_pods.add(pid)
        for entry in pod.get("server_list") or []:
            sid = entry.get("server_id")
            if sid not in server_ids:
                problems.append(f"super pod {pid}: server_id {sid!r} is not in server_list")
            elif sid in pod_of:
                problems.append(f"server {sid} is in super pods {pod_of[sid]} and {pid}")
            else:
                pod_of[sid] = pid
    unlisted = [s for s in server_ids if s not in pod_of]
    if unlisted:
        problems.append(f"servers not in any super pod: {', '.join(unlisted[:SHOWN])}")
    order = [pod_of.get(s) for s in server_ids]
    blocks = [p for k, p in enumerate(order) if p is not None and (k == 0 or order[k - 1] != p)]
    if len(blocks) != len(set(blocks)):
        problems.append("servers of one super pod are not listed together in server_list")
    if missing_ip and len(seen_pods) > 1:
        problems.append("device_ip missing: required with more than one super pod")
    per_pod: dict[str, dict[int, str]] = {}
    for sid in server_ids:
        pid = pod_of.get(sid)
        if pid is None:
            continue
        for where, sd in sdid_by_server.get(sid, []):
            first = per_pod.setdefault(pid, {}).get(sd)
            if first is not None:
                problems.append(
                    f"{where}: super_device_id {sd} already exists in super pod {pid} ({first})"
                )
            else:
                per_pod[pid][sd] = where
    return problems


def sdid_problems(table: Mapping[str, Any]) -> list[str]:
    """SDIDs that would misroute on real hardware: HCCL decodes the server from them, so all
    devices of one server must decode to one server index, and servers of one super pod to
    different ones. (Not a parser rule: HCCL's own documented example uses 0..7.)"""
    problems: list[str] = []
    pod_of = {
        s.get("server_id"): p.get("super_pod_id")
        for p in table.get("super_pod_list") or []
        for s in p.get("server_list") or []
    }
    index_owner: dict[tuple[Any, int], str] = {}
    for server in table.get("server_list") or []:
        sid = server.get("server_id")
        found = {
            decode_sdid(int(d["super_device_id"]))[0]
            for d in server.get("device") or []
            if str(d.get("super_device_id", "")).isdigit()
        }
        if len(found) > 1:
            problems.append(f"server {sid}: SDIDs decode to server indexes {sorted(found)}")
        for idx in found:
            key = (pod_of.get(sid), idx)
            if key in index_owner and index_owner[key] != sid:
                problems.append(
                    f"servers {index_owner[key]} and {sid} share SDID server index {idx}"
                    f" in super pod {key[0]}"
                )
            index_owner.setdefault(key, sid)
    return problems


def check_rank_table(table: Mapping[str, Any], where: str) -> None:
    """PlacementError (one line) unless ``table`` passes the parser rules and the SDID rules."""
    problems = validate_rank_table(table)
    if table.get("version") == "1.2" and not problems:
        problems = sdid_problems(table)
    if problems:
        raise PlacementError(_one_line("invalid rank table", problems), where=where)


def write_rank_table(
    site: Site,
    rm: RankMap,
    path: str | os.PathLike,
    version: str = "1.0",
    facts: Mapping[str, NodeFacts] | None = None,
):
    """Build, validate, then atomically write the rank table; PlacementError if invalid."""
    table = build_rank_table(site, rm, version, facts)
    check_rank_table(table, str(path))
    return write_json_atomic(path, table)
