"""A node's figures as a Prometheus textfile, for node_exporter's textfile collector.

``render_node_textfile`` is pure (a summary in, the exposition text out); the agent of each node
calls it with its node's summary every sampling period and writes the result with
``write_node_textfile`` (promfile.py, the project's one textfile writer: checked against the
exposition rules, temp file + rename, so a scrape never reads half a file) into the site's
``paths.prometheus_textfile_dir``. Every series carries job, user, node and supernode; the
per-rank ones also rank, the per-device ones device, the per-NIC ones nic: one file per job and
node, and no series twice (not even across two nodes' files in a shared directory).
Units are in the names (seconds, bytes, watts, celsius, ratio 0..1, hertz), as Prometheus'
naming rules ask.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from slurm_supernode.observe.summary import AttemptSummary, NodeSummary
from slurm_supernode.promfile import Family, Labels, Scope, Series, check, render, write_textfile

# name -> (type, help); the order of the file
METRICS: dict[str, tuple[str, str]] = {
    "snrun_node_sample_timestamp_seconds": ("gauge", "Time of the node's newest sample"),
    "snrun_node_cpu_usage_ratio": ("gauge", "CPU busy share of the node (0..1)"),
    "snrun_node_memory_used_bytes": ("gauge", "Memory in use on the node"),
    "snrun_node_memory_total_bytes": ("gauge", "Memory of the node"),
    "snrun_node_disk_used_bytes": ("gauge", "Used space of the job directory's file system"),
    "snrun_node_disk_total_bytes": ("gauge", "Size of the job directory's file system"),
    "snrun_node_network_receive_bytes_per_second": ("gauge", "Bytes received per second by NIC"),
    "snrun_node_network_transmit_bytes_per_second": ("gauge", "Bytes sent per second by NIC"),
    "snrun_device_utilization_ratio": ("gauge", "Accelerator busy share (0..1)"),
    "snrun_device_memory_used_bytes": ("gauge", "Accelerator memory in use"),
    "snrun_device_memory_total_bytes": ("gauge", "Accelerator memory"),
    "snrun_device_temperature_celsius": ("gauge", "Accelerator temperature"),
    "snrun_device_power_watts": ("gauge", "Accelerator power draw"),
    "snrun_device_sm_clock_hertz": ("gauge", "Accelerator core (SM) clock"),
    "snrun_device_ecc_uncorrected_errors": ("gauge", "Uncorrected ECC errors (volatile count)"),
    "snrun_device_last_xid": ("gauge", "Last Xid (NVIDIA) or error code (Ascend) seen"),
    "snrun_node_step_seconds": ("gauge", "Median optimizer step time of the node's ranks"),
    "snrun_rank_step_seconds": (
        "gauge",
        "Median optimizer step time of a rank over its last steps",
    ),
    "snrun_rank_last_step": ("gauge", "Newest optimizer step of a rank"),
    "snrun_rank_tokens_per_second": ("gauge", "Tokens per second of a rank"),
    "snrun_rank_samples_per_second": ("gauge", "Samples per second of a rank"),
    "snrun_rank_loss": ("gauge", "Newest loss a rank reported"),
    "snrun_node_communication_share_ratio": (
        "gauge",
        "Exposed communication over step time, median of the node's ranks (0..1)",
    ),
    "snrun_node_planned_communication_share_ratio": (
        "gauge",
        "The planner's communication share for this layout (0..1)",
    ),
    "snrun_node_slow": ("gauge", "1 when the judge named this node slow, else 0"),
    "snrun_node_slow_ratio": ("gauge", "The slow node's figure over its peers' median"),
    "snrun_job_checkpoint_age_seconds": ("gauge", "Age of the job's newest checkpoint"),
}


def _node_series(
    n: NodeSummary, base: dict[str, str], checkpoint_age_s: float | None
) -> Iterable[tuple[str, dict[str, str], float | None]]:
    yield "snrun_node_sample_timestamp_seconds", base, n.sampled_t
    yield "snrun_node_cpu_usage_ratio", base, None if n.cpu_percent is None else n.cpu_percent / 100
    yield "snrun_node_memory_used_bytes", base, n.mem_used_bytes
    yield "snrun_node_memory_total_bytes", base, n.mem_total_bytes
    yield "snrun_node_disk_used_bytes", base, n.disk_used_bytes
    yield "snrun_node_disk_total_bytes", base, n.disk_total_bytes
    for nic, nic_rate in n.nics.items():
        labels = {**base, "nic": nic}
        yield "snrun_node_network_receive_bytes_per_second", labels, nic_rate.rx_bytes_per_s
        yield "snrun_node_network_transmit_bytes_per_second", labels, nic_rate.tx_bytes_per_s
    for d in n.devices:
        labels = {**base, "device": str(d.index)}
        util = None if d.util_percent is None else d.util_percent / 100
        yield "snrun_device_utilization_ratio", labels, util
        yield "snrun_device_memory_used_bytes", labels, d.mem_used_bytes
        yield "snrun_device_memory_total_bytes", labels, d.mem_total_bytes
        yield "snrun_device_temperature_celsius", labels, d.temperature_c
        yield "snrun_device_power_watts", labels, d.power_w
        clock = None if d.sm_clock_mhz is None else d.sm_clock_mhz * 1e6
        yield "snrun_device_sm_clock_hertz", labels, clock
        yield "snrun_device_ecc_uncorrected_errors", labels, d.ecc_errors
        yield "snrun_device_last_xid", labels, d.xid
    yield "snrun_node_step_seconds", base, n.step_s
    for r in n.ranks:
        labels = {**base, "rank": str(r.rank)}
        yield "snrun_rank_step_seconds", labels, r.step_s if r.window else None
        yield "snrun_rank_last_step", labels, r.last_step
        yield "snrun_rank_tokens_per_second", labels, r.tokens_per_s
        yield "snrun_rank_samples_per_second", labels, r.samples_per_s
        yield "snrun_rank_loss", labels, r.loss
    if n.comm is not None:
        yield "snrun_node_communication_share_ratio", base, n.comm.share
        yield "snrun_node_planned_communication_share_ratio", base, n.comm.plan_share
    yield "snrun_node_slow", base, 1 if n.slow else 0
    yield "snrun_node_slow_ratio", base, n.slow.ratio if n.slow else None
    yield "snrun_job_checkpoint_age_seconds", base, checkpoint_age_s


def node_families(summary: AttemptSummary, node: str) -> list[Family]:
    """The node's families (none when the summary lacks the node). Unknown figures are left
    out, not written as 0."""
    n = summary.node(node)
    if n is None:
        return []
    base = {
        "job": "" if summary.job_id is None else str(summary.job_id),
        "user": summary.user,
        "node": n.node,
        "supernode": n.supernode or "",
    }
    rows: dict[str, dict[Labels, float]] = {name: {} for name in METRICS}
    for name, values, value in _node_series(n, base, summary.checkpoint_age_s):
        key = tuple(values.items())
        if value is not None and key not in rows[name]:  # two NICs by one name: the first
            rows[name][key] = value
    return [
        Family(name, help_text, tuple(Series(name, k, v) for k, v in rows[name].items()), kind)
        for name, (kind, help_text) in METRICS.items()
        if rows[name]
    ]


def render_node_textfile(summary: AttemptSummary, node: str) -> str:
    """The node's exposition text (promfile's rendering, checked): empty without the node."""
    text = render(node_families(summary, node))
    check(text)
    return text


def scope(job_id: int | None, node: str) -> Scope:
    """The series of one job's node: the next write replaces them."""
    return Scope("snrun_", (("job", "" if job_id is None else str(job_id)), ("node", node)))


def textfile_path(directory: str | os.PathLike[str], job_id: int | None, node: str) -> Path:
    """``<dir>/snrun-<job>-<node>.prom``: node_exporter reads only ``*.prom``."""
    return Path(directory) / f"snrun-{job_id if job_id is not None else 'nojob'}-{node}.prom"


def write_node_textfile(
    directory: str | os.PathLike[str], summary: AttemptSummary, node: str
) -> Path:
    """Write the node's textfile through promfile (locked, checked, temp file + rename)."""
    path = textfile_path(directory, summary.job_id, node)
    return write_textfile(path, node_families(summary, node), scope(summary.job_id, node),
                          where="paths.prometheus_textfile_dir")  # fmt: skip


def remove_node_textfile(directory: str | os.PathLike[str], job_id: int | None, node: str) -> None:
    """At the job's end: a finished job's figures must not linger as live series."""
    path = textfile_path(directory, job_id, node)
    path.unlink(missing_ok=True)
    Path(str(path) + ".lock").unlink(missing_ok=True)
