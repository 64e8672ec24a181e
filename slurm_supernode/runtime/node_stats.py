"""A node's CPU, memory, disk and network figures from /proc and statvfs (no psutil): the
parsers are pure (tested on recorded text), ``NodeStats.read`` is the one reader.

CPU is a share of the interval since the last read (from /proc/stat's jiffies), so the first
read has none; NIC byte counters are cumulative as the kernel keeps them (a view takes the
difference); the loopback device is left out.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from slurm_supernode.observe.records import NodeSample


def parse_cpu_times(text: str) -> tuple[int, int] | None:
    """/proc/stat's first line -> (busy, total) jiffies; None when it is not there."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            values = [int(v) for v in parts[1:]]
            idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
            total = sum(values[:8])  # guest times are counted in user already
            return total - idle, total
    return None


def parse_meminfo(text: str) -> tuple[int, int] | None:
    """/proc/meminfo -> (used, total) bytes, used = total - available."""
    fields: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            fields[name] = int(parts[0]) * 1024
    if "MemTotal" not in fields or "MemAvailable" not in fields:
        return None
    return fields["MemTotal"] - fields["MemAvailable"], fields["MemTotal"]


def parse_net_dev(text: str) -> tuple[dict[str, int], dict[str, int]]:
    """/proc/net/dev -> ({nic: rx bytes}, {nic: tx bytes}), loopback left out."""
    rx: dict[str, int] = {}
    tx: dict[str, int] = {}
    for line in text.splitlines()[2:]:
        name, sep, rest = line.partition(":")
        parts = rest.split()
        name = name.strip()
        if not sep or name == "lo" or len(parts) < 9:
            continue
        rx[name], tx[name] = int(parts[0]), int(parts[8])
    return rx, tx


def _read(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return None


@dataclass
class NodeStats:
    """Reads one node's figures; keeps the last CPU times for the next read's share."""

    node: str
    disk_path: str  # the job directory: its file system's use is reported
    proc: str = "/proc"
    reader: Callable[[str], str | None] = _read
    _cpu: tuple[int, int] | None = None

    def read(self, now: float) -> NodeSample:
        cpu_percent = None
        stat = self.reader(f"{self.proc}/stat")
        times = parse_cpu_times(stat) if stat else None
        if times is not None and self._cpu is not None:
            busy, total = times[0] - self._cpu[0], times[1] - self._cpu[1]
            cpu_percent = round(100.0 * busy / total, 1) if total > 0 else None
        self._cpu = times or self._cpu
        meminfo = self.reader(f"{self.proc}/meminfo")
        mem = parse_meminfo(meminfo) if meminfo else None
        net = self.reader(f"{self.proc}/net/dev")
        rx, tx = parse_net_dev(net) if net else ({}, {})
        disk = disk_use(self.disk_path)
        return NodeSample(
            t=now,
            node=self.node,
            cpu_percent=cpu_percent,
            mem_used_bytes=mem[0] if mem else None,
            mem_total_bytes=mem[1] if mem else None,
            disk_used_bytes=disk[0] if disk else None,
            disk_total_bytes=disk[1] if disk else None,
            nic_rx_bytes=rx,
            nic_tx_bytes=tx,
        )


def disk_use(path: str) -> tuple[int, int] | None:
    """(used, total) bytes of the file system holding ``path``; None where it cannot be read."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    total = st.f_blocks * st.f_frsize
    return total - st.f_bfree * st.f_frsize, total
