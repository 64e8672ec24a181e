"""Validation of an HCCL rank table against the rules of HCCL's own parser (torch_npu
silently ignores a bad table), plus the SDID rules real hardware needs."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from slurm_supernode.errors import PlacementError
from slurm_supernode.placement.hccl_facts import decode_sdid
from slurm_supernode.placement.hccl_format import (
    DEVICE_PORT,
    MAX_SERVER_ID,
    SHOWN,
    VERSIONS,
    one_line,
)


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
    scan = _Scan(problems, v12)
    for i, server in enumerate(servers):
        _check_server(scan, i, server)
    _check_ranks(scan)
    if len(set(scan.server_ids)) != len(scan.server_ids):
        problems.append("server_id values are not unique")
    if scan.with_ip and scan.without_ip:
        problems.append("device_ip set on some devices but not on others")
    if scan.without_ip and len(servers) > 1 and not v12:
        problems.append("device_ip missing: required with more than one server")
    _check_backups(scan)
    if v12:
        problems += _validate_pods(
            table, servers, scan.server_ids, scan.sdid_by_server, bool(scan.without_ip)
        )
    return problems


@dataclass
class _Scan:
    """What one pass over the servers and devices collects for the table-wide rules."""

    problems: list[str]
    v12: bool
    device_ips: dict[str, str] = field(default_factory=dict)  # ip -> where
    backup_ips: dict[str, str] = field(default_factory=dict)
    rank_ids: list[int] = field(default_factory=list)
    rank_server: dict[int, int] = field(default_factory=dict)
    server_ids: list[str] = field(default_factory=list)
    with_ip: int = 0
    without_ip: int = 0
    ports_of: dict[tuple[int, str], str] = field(default_factory=dict)  # (server, ip) -> port
    backups: list[tuple[str, int, str, str | None]] = field(
        default_factory=list
    )  # where, server, backup ip, port
    sdid_by_server: dict[str, list[tuple[str, int]]] = field(default_factory=dict)


def _check_server(scan: _Scan, i: int, server: Mapping[str, Any]) -> None:
    """One server: its id, host_ip, and each device (``_check_device``)."""
    problems = scan.problems
    sid = server.get("server_id")
    if not isinstance(sid, str) or not sid:
        problems.append(f"server_list[{i}]: server_id missing")
        sid = f"#{i}"
    elif len(sid) > MAX_SERVER_ID:
        problems.append(f"server {sid}: server_id longer than {MAX_SERVER_ID} characters")
    scan.server_ids.append(sid)
    host_ip = server.get("host_ip")
    if host_ip is not None and not _ip_ok(host_ip):
        problems.append(f"server {sid}: host_ip {host_ip!r} is not an IP address")
    devices = server.get("device")
    if not isinstance(devices, list) or not devices:
        problems.append(f"server {sid}: device list missing or empty")
        return
    dev_ids: set[int] = set()
    host_ports: dict[str, str] = {}
    for j, dev in enumerate(devices):
        _check_device(scan, i, sid, f"server {sid} device[{j}]", dev, dev_ids, host_ports)


def _check_device(
    scan: _Scan,
    i: int,
    sid: str,
    where: str,
    dev: Mapping[str, Any],
    dev_ids: set[int],
    host_ports: dict[str, str],
) -> None:
    """One device: required fields, ids, IPs, ports, backup NIC, rank id and SDID."""
    problems = scan.problems
    required = ["device_id", "rank_id"] + (["super_device_id"] if scan.v12 else [])
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
    _check_addresses(scan, i, where, dev, host_ports)
    rid = _uint(dev.get("rank_id"))
    if rid is None:
        if dev.get("rank_id") not in (None, ""):
            problems.append(f"{where}: rank_id {dev.get('rank_id')!r} is not an integer")
    else:
        scan.rank_ids.append(rid)
        scan.rank_server[rid] = i
    if scan.v12 and dev.get("super_device_id") not in (None, ""):
        sd = _uint(dev.get("super_device_id"))
        if sd is None or sd > 0xFFFFFFFF:
            problems.append(f"{where}: super_device_id {dev.get('super_device_id')!r} is not a u32")
        else:
            scan.sdid_by_server.setdefault(sid, []).append((where, sd))


def _check_addresses(
    scan: _Scan, i: int, where: str, dev: Mapping[str, Any], host_ports: dict[str, str]
) -> None:
    """A device's IP, ports and backup NIC: well formed and not used twice."""
    problems = scan.problems
    ip = dev.get("device_ip")
    if ip in (None, ""):
        scan.without_ip += 1
    else:
        scan.with_ip += 1
        if not _ip_ok(ip):
            problems.append(f"{where}: device_ip {ip!r} is not an IP address")
        elif ip in scan.device_ips:
            problems.append(f"{where}: device_ip {ip} also used by {scan.device_ips[ip]}")
        else:
            scan.device_ips[ip] = where
            scan.ports_of[(i, ip)] = dev.get("device_port") or str(DEVICE_PORT)
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
        elif bip in scan.backup_ips:
            problems.append(f"{where}: backup_device_ip {bip} also used by {scan.backup_ips[bip]}")
        else:
            scan.backup_ips[bip] = where
            scan.backups.append((where, i, bip, dev.get("backup_device_port")))


def _check_ranks(scan: _Scan) -> None:
    """rank_id values are exactly 0..n-1, one block per server."""
    rank_ids = scan.rank_ids
    if sorted(rank_ids) != list(range(len(rank_ids))):
        scan.problems.append(f"rank_id values are not exactly 0..{len(rank_ids) - 1}")
        return
    order = [scan.rank_server[r] for r in range(len(rank_ids))]
    blocks = [s for k, s in enumerate(order) if k == 0 or order[k - 1] != s]
    if len(blocks) != len(set(blocks)):
        scan.problems.append(
            "rank_id values interleave across servers (each server needs one block)"
        )


def _check_backups(scan: _Scan) -> None:
    """A backup IP is another die of the same server, on a port other than that die's."""
    for where, i, bip, bport in scan.backups:
        owner = scan.device_ips.get(bip)
        if owner is None:
            continue  # HCCL only warns: the backup die is outside this table
        if not owner.startswith(f"server {scan.server_ids[i]} device["):
            scan.problems.append(
                f"{where}: backup_device_ip {bip} belongs to {owner} (other server)"
            )
        elif bport is not None and bport == scan.ports_of.get((i, bip)):
            scan.problems.append(
                f"{where}: backup_device_port {bport} equals the device_port of {owner}"
            )


def _validate_pods(
    table: Mapping[str, Any],
    servers: list[Any],
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
        raise PlacementError(one_line("invalid rank table", problems), where=where)
