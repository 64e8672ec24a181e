"""The HCCL rank table's format: versions, the device fields of each, HCCL's default ports,
and how a list of problems with a table is written in one line."""

from __future__ import annotations

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


def one_line(what: str, items: list[str]) -> str:
    """``what: a; b; c; d (+N more)``: a list of problems in a one-line error."""
    more = f" (+{len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return f"{what}: " + "; ".join(items[:SHOWN]) + more
