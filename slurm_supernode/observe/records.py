"""The observe records: what the agent and the ranks write while a job trains, and how to read them.

One folder per attempt, so restarts and requeues never mix: ``<job dir>/observe/<attempt>/``.
Each writer appends JSON lines to a file only it writes (one per node or per rank), so no lock is
needed and a reader can follow a running job; a torn last line (the writer is mid-write, or died)
is skipped, never an error.

- ``<node>.samples.jsonl``: `NodeSample` and `DeviceSample` records of one node (``kind``
  tells them apart), written by the agent's sampler;
- ``rank-<rank>.steps.jsonl``: `StepRecord` lines of one rank, written by the in-rank step hook;
- ``slow.jsonl``: `SlowNodeMark` lines, written by the one process that judges the nodes;
- ``rank-<rank>.comm.jsonl``: `CommShare` lines of one rank, one per profiled window.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

OBSERVE_DIR = "observe"


@dataclass(frozen=True)
class NodeSample:
    """One node at one time: CPU, memory, disk and per-NIC byte counters (cumulative)."""

    t: float  # seconds since the epoch
    node: str
    cpu_percent: float | None = None
    mem_used_bytes: int | None = None
    mem_total_bytes: int | None = None
    disk_used_bytes: int | None = None  # of the job directory's file system
    disk_total_bytes: int | None = None
    nic_rx_bytes: dict[str, int] = field(default_factory=dict)
    nic_tx_bytes: dict[str, int] = field(default_factory=dict)
    kind: str = "node"
    # what this node cannot measure now, and why ({"devices": "NVML: no module pynvml"}):
    # optional, added after the first format (readers of older files see {})
    missing: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DeviceSample:
    """One accelerator at one time; None where the device or its library does not say."""

    t: float
    node: str
    index: int  # the device's index on the node (as CUDA/ASCEND_RT_VISIBLE_DEVICES count)
    util_percent: float | None = None
    mem_used_bytes: int | None = None
    mem_total_bytes: int | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    sm_clock_mhz: float | None = None
    ecc_errors: int | None = None  # uncorrected, volatile
    xid: int | None = None  # the last Xid (NVIDIA) or error code (Ascend) seen, if any
    kind: str = "device"
    # optional, added after the first format: NVML's clock event ("throttle") reasons as its
    # bit mask (``observe/clock_reasons`` says them in words); the device's top SM clock
    clock_reasons: int | None = None
    max_sm_clock_mhz: float | None = None


@dataclass(frozen=True)
class StepRecord:
    """One optimizer step of one rank: when it ended and how long it took since the last."""

    t: float
    rank: int
    node: str
    step: int
    seconds: float
    tokens: int | None = None
    samples: int | None = None
    loss: float | None = None
    # optional, added after the first format: seconds of the step the rank's main thread was
    # on a CPU (not waiting in a collective or asleep): what the slow-node judge compares
    busy_s: float | None = None
    # optional, added after the first format: when the newest checkpoint was written (epoch
    # seconds; $SNRUN_CHECKPOINT_DIR's newest file, or the script's progress.report), on the
    # last record of each batch that local rank 0 writes
    checkpoint_t: float | None = None


@dataclass(frozen=True)
class SlowNodeMark:
    """A node whose ranks are persistently slower than their peers, with the evidence."""

    t: float
    node: str
    supernode: str | None
    ratio: float  # the node's figure over the median of its peers (step time: > 1 is slower)
    evidence: str  # in words: which figure, over how many steps or seconds, against what
    kind: str = "slow_node"


@dataclass(frozen=True)
class CommShare:
    """One rank's profiled window: compute, exposed and overlapped communication, and the plan."""

    t: float
    rank: int
    node: str
    steps: int  # how many steps the window profiled
    compute_s: float
    exposed_comm_s: float  # communication no compute overlapped: what a step waits for
    overlapped_comm_s: float
    by_group: dict[str, float] = field(default_factory=dict)  # group kind (tp, dp, ...) -> seconds
    plan_share: float | None = None  # the planner's communication share for this layout, 0..1
    trace: str | None = None  # the profiler trace file (Perfetto / TensorBoard), job-dir relative
    # why plan_share is None, or what it was computed with (model, links: bench run or nominal)
    plan_note: str | None = None
    kind: str = "comm_share"


Record = NodeSample | DeviceSample | StepRecord | SlowNodeMark | CommShare


def attempt_dir(job_dir: Path, attempt: int) -> Path:
    """Where one attempt's observe records live."""
    return job_dir / OBSERVE_DIR / str(attempt)


def samples_path(job_dir: Path, attempt: int, node: str) -> Path:
    return attempt_dir(job_dir, attempt) / f"{node}.samples.jsonl"


def steps_path(job_dir: Path, attempt: int, rank: int) -> Path:
    return attempt_dir(job_dir, attempt) / f"rank-{rank}.steps.jsonl"


def slow_path(job_dir: Path, attempt: int) -> Path:
    return attempt_dir(job_dir, attempt) / "slow.jsonl"


def comm_path(job_dir: Path, attempt: int, rank: int) -> Path:
    return attempt_dir(job_dir, attempt) / f"rank-{rank}.comm.jsonl"


def record_line(record: Record) -> str:
    """The JSON line of a record (compact, one line, newline-terminated)."""
    return json.dumps(asdict(record), separators=(",", ":")) + "\n"


def append(path: Path, records: list[Record]) -> None:
    """Append records with one write (O_APPEND): a reader sees whole lines or a torn last one."""
    if not records:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(record_line(r) for r in records).encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _from_dict(raw: dict[str, Any]) -> Record | None:
    kind = raw.get("kind")
    try:
        if kind == "node":
            return NodeSample(**raw)
        if kind == "device":
            return DeviceSample(**raw)
        if kind == "slow_node":
            return SlowNodeMark(**raw)
        if kind == "comm_share":
            return CommShare(**raw)
        if "step" in raw and "rank" in raw:
            return StepRecord(**raw)
    except TypeError:
        return None
    return None


def read(path: Path) -> Iterator[Record]:
    """The records of one file in order, a line at a time (a file of a week's steps is never
    held whole); unreadable or torn lines are skipped."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 (closed below: a generator may stop early)
    except OSError:
        return
    with fh:
        try:
            for line in fh:
                if (rec := _record(line)) is not None:
                    yield rec
        except OSError:
            return


def read_tail(path: Path, max_bytes: int) -> Iterator[Record]:
    """The records of the file's last ``max_bytes`` (whole lines only), in order: what a live
    view needs of a file that grows all day, without reading all of it."""
    try:
        with open(path, "rb") as fh:
            start = max(0, fh.seek(0, os.SEEK_END) - max_bytes)
            fh.seek(start)
            data = fh.read()
    except OSError:
        return
    if start > 0:  # the first line is cut: start after it
        cut = data.find(b"\n")
        data = data[cut + 1 :] if cut >= 0 else b""
    yield from _parse(data.decode(errors="replace"))


def _parse(text: str) -> Iterator[Record]:
    for line in text.splitlines():
        if (rec := _record(line)) is not None:
            yield rec


def _record(line: str | bytes) -> Record | None:
    try:
        raw = json.loads(line)
    except ValueError:  # a torn line, or bytes that are not UTF-8
        return None
    return _from_dict(raw) if isinstance(raw, dict) else None


def attempts(job_dir: Path) -> list[int]:
    """The attempts that have observe records, in order."""
    root = job_dir / OBSERVE_DIR
    try:
        names = [p.name for p in root.iterdir() if p.is_dir()]
    except OSError:
        return []
    return sorted(int(n) for n in names if n.isdigit())
