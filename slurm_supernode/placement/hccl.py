"""Ascend HCCL rank tables (``RANK_TABLE_FILE``) generated from the rank map.

Why from the rank map: HCCL's rank_id must equal the torch RANK of the same process, or
collectives silently pair the wrong devices; deriving both from one map makes that true by
construction. torch_npu only notices bad content at the first collective, so the table is
validated before it is written, and written atomically (temp file + rename) so a reader never
sees half a file.

Version 1.0: server_list of devices (device_id, device_ip, rank_id). Version 1.2 (SuperPoD)
adds per device super_device_id and ports, per server host_ip, and a top-level super_pod_list.
All values are strings, as in Ascend's own examples.
"""

from __future__ import annotations

import os

from slurm_supernode.errors import InputError, PlacementError
from slurm_supernode.fsutil import write_json_atomic
from slurm_supernode.placement.model import RankMap
from slurm_supernode.site.model import Site

VERSIONS = ("1.0", "1.2")
DEVICE_PORT = 16666
BACKUP_DEVICE_PORT = 16667
HOST_PORT_BASE = 16665  # host_port = base + local rank: one port per device on a host

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


def build_rank_table(site: Site, rm: RankMap, version: str = "1.0") -> dict:
    """The rank table of ``rm`` (servers in node-rank order, devices in local-rank order)."""
    if version not in VERSIONS:
        raise InputError(
            f"rank table version {version!r} is not supported",
            where="--rank-table-version",
            hint="one of " + ", ".join(VERSIONS),
        )
    by_node: list[list] = [[] for _ in rm.nodes]
    for r in rm.ranks:
        by_node[r.node_rank].append(r)
    servers = []
    pods: dict[str, list[str]] = {}
    sn_ordinal = {sn.name: i for i, sn in enumerate(site.supernodes)}
    for placement, ranks in zip(rm.nodes, by_node, strict=True):
        node = site.node(placement.hostname)
        if len(node.device_ips) < node.devices:
            raise PlacementError(
                f"node {node.hostname} has {len(node.device_ips)} device IPs for "
                f"{node.devices} devices; the rank table needs one per device",
                where=f"site {site.name}",
                hint="list device_ips for every Ascend node in the site config",
            )
        server_id = node.host_ip or node.hostname
        devices = []
        for r in ranks:
            dev = {
                "device_id": str(r.device),
                "device_ip": node.device_ips[r.device],
                "rank_id": str(r.rank),
            }
            if version == "1.2":
                partner = r.device ^ 1  # the other die of the same chip (A3 pairs dies)
                backup = node.device_ips[partner] if partner < node.devices else dev["device_ip"]
                dev = {
                    "device_id": str(r.device),
                    "super_device_id": str(node.index * node.devices + r.device),
                    "device_ip": node.device_ips[r.device],
                    "device_port": str(DEVICE_PORT),
                    "backup_device_ip": backup,
                    "backup_device_port": str(BACKUP_DEVICE_PORT),
                    "host_port": str(HOST_PORT_BASE + r.local_rank),
                    "rank_id": str(r.rank),
                }
            devices.append(dev)
        server: dict = {"server_id": server_id}
        if version == "1.2":
            server["host_ip"] = node.host_ip or ""
        server["device"] = devices
        if version == "1.0":
            server["host_nic_ip"] = "reserve"
        servers.append(server)
        sn = site.supernode(node.supernode)
        pod = sn.super_pod_id if sn.super_pod_id is not None else sn_ordinal[sn.name]
        pods.setdefault(str(pod), []).append(server_id)
    table: dict = {
        "status": "completed",
        "version": version,
        "server_count": str(len(servers)),
        "server_list": servers,
    }
    if version == "1.2":
        table["super_pod_list"] = [
            {"super_pod_id": pid, "server_list": [{"server_id": s} for s in ids]}
            for pid, ids in pods.items()
        ]
    return table


def validate_rank_table(table: dict) -> list[str]:
    """Every problem found (empty when valid): fields, unique IPs, rank ids, counts."""
    problems: list[str] = []
    version = table.get("version")
    if version not in VERSIONS:
        return [f"version {version!r} is not one of {', '.join(VERSIONS)}"]
    if table.get("status") != "completed":
        problems.append("status must be 'completed'")
    servers = table.get("server_list") or []
    if table.get("server_count") != str(len(servers)):
        problems.append(f"server_count {table.get('server_count')!r} != {len(servers)} servers")
    fields = V12_DEVICE if version == "1.2" else V10_DEVICE
    ips: dict[str, str] = {}
    rank_ids: list[int] = []
    server_ids = []
    for i, server in enumerate(servers):
        sid = server.get("server_id")
        if not sid:
            problems.append(f"server_list[{i}]: server_id missing")
        server_ids.append(sid)
        if version == "1.2" and not server.get("host_ip"):
            problems.append(f"server {sid}: host_ip missing")
        for j, dev in enumerate(server.get("device") or []):
            where = f"server {sid} device[{j}]"
            for f in fields:
                if dev.get(f) in (None, ""):
                    problems.append(f"{where}: {f} missing")
            ip = dev.get("device_ip")
            if ip and ip in ips:
                problems.append(f"{where}: device_ip {ip} also used by {ips[ip]}")
            elif ip:
                ips[ip] = where
            try:
                rank_ids.append(int(dev.get("rank_id")))
            except (TypeError, ValueError):
                problems.append(f"{where}: rank_id {dev.get('rank_id')!r} is not an integer")
    if sorted(rank_ids) != list(range(len(rank_ids))):
        problems.append(f"rank_id values are not exactly 0..{len(rank_ids) - 1}")
    if len(set(server_ids)) != len(server_ids):
        problems.append("server_id values are not unique")
    if version == "1.2":
        listed = [
            s.get("server_id")
            for pod in table.get("super_pod_list") or []
            for s in pod.get("server_list") or []
        ]
        if sorted(map(str, listed)) != sorted(map(str, server_ids)):
            problems.append("super_pod_list does not list every server exactly once")
    return problems


def write_rank_table(site: Site, rm: RankMap, path: str | os.PathLike, version: str = "1.0"):
    """Build, validate, then atomically write the rank table; PlacementError if invalid."""
    table = build_rank_table(site, rm, version)
    problems = validate_rank_table(table)
    if problems:
        shown = "; ".join(problems[:5]) + (
            f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
        )
        raise PlacementError(f"invalid rank table: {shown}", where=str(path))
    return write_json_atomic(path, table)
