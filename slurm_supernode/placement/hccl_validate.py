"""Validation of an HCCL rank table against the rules of HCCL's own parser (torch_npu
silently ignores a bad table), plus the SDID rules real hardware needs."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
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
        raise PlacementError(one_line("invalid rank table", problems), where=where)
