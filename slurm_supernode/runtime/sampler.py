"""The agent's sampler: every node of a job, every ``period`` seconds, with no change to the
user's code: the node (CPU, memory, the job directory's disk, NIC bytes) and its devices (NVML
or npu-smi), appended to ``observe/<attempt>/<node>.samples.jsonl`` (``observe/records``).

A thread of the agent, so it lives exactly as long as the node's torchrun and needs no process
of its own. Whatever cannot be measured (no NVML, a device gone, the metrics' disk full, the
size cap reached) is said once in the agent's log (the job's Slurm log) and carried in the
node samples' ``missing`` field while it lasts; the job itself is never touched.

Size: a node line is ~300 bytes with two NICs, a device line ~250 bytes. At the default 10 s
that is 8,640 rounds a day: 2.6 MB a node-day without devices, 20 MB with 8 GPUs (measured
figures in docs/observe.md). ``samples_mb`` (site ``observe.samples_mb``, default 64) caps one
node's file per attempt: past it the sampler stops writing and says so.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from slurm_supernode.observe.records import DeviceSample, Record, append, samples_path
from slurm_supernode.runtime.node_stats import NodeStats
from slurm_supernode.site.model import ObserveSettings

PERIOD_ENV = "SNRUN_SAMPLE_PERIOD"  # seconds; overrides the site's observe.sample_period


class DeviceSource(Protocol):
    def read(self, now: float) -> tuple[list[DeviceSample], dict[str, str]]: ...


def device_source(vendor: str, node: str, devices: tuple[int, ...]) -> DeviceSource | None:
    """NVML on NVIDIA sites, npu-smi on Ascend; None for a node the job gives no device."""
    if not devices:
        return None
    if vendor == "ascend":
        from slurm_supernode.runtime.device_stats import NpuSmiDevices

        return NpuSmiDevices(node, devices)
    from slurm_supernode.runtime.device_stats import NvmlDevices

    return NvmlDevices(node, devices)


def sample_period(site_period: float, environ_value: str | None) -> float:
    """The period in force: ``$SNRUN_SAMPLE_PERIOD`` (0: off) over the site's; a bad value
    is said once and the site's kept (the job is not failed for its metrics)."""
    if environ_value in (None, ""):
        return site_period
    try:
        value = float(environ_value)
        if value >= 0 and value == value and value != float("inf"):
            return value
    except ValueError:
        pass
    print(
        f"snrun: observe: {PERIOD_ENV}={environ_value!r} is not a number of seconds >= 0; "
        f"sampling every {site_period:g} s",
        file=sys.stderr,
        flush=True,
    )
    return site_period


class Sampler:
    """One node's samples of one attempt; ``round`` takes and writes one set."""

    def __init__(
        self,
        job_dir: Path,
        attempt: int,
        node: str,
        *,
        devices: DeviceSource | None,
        max_bytes: int,
        stats: NodeStats | None = None,
        say: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = samples_path(job_dir, attempt, node)
        self.node = node
        self.devices = devices
        self.max_bytes = max_bytes
        self.stats = stats or NodeStats(node, str(job_dir))
        self.clock = clock
        self._say = say or _to_stderr
        self._said: set[str] = set()
        self._written = _size(self.path)
        self.dropped = 0  # rounds that could not be written

    def round(self) -> None:
        now = self.clock()
        node = self.stats.read(now)
        samples: list[DeviceSample] = []
        missing: dict[str, str] = {}
        if self.devices is not None:
            try:
                samples, missing = self.devices.read(now)
            except Exception as exc:  # a source that fails outright: the node still goes on
                missing = {"devices": f"{type(exc).__name__}: {exc}"}
        for what, why in missing.items():
            self._once(f"{what}: {why}", f"{what} not sampled: {why}; the job goes on")
        self._write([replace(node, missing=missing), *samples])

    def _write(self, records: list[Record]) -> None:
        if self._written >= self.max_bytes:
            self.dropped += 1
            self._once(
                "cap",
                f"{self.path.name} reached {self.max_bytes >> 20} MB "
                "(observe.samples_mb): no more samples this attempt",
            )
            return
        try:
            append(self.path, records)
        except OSError as exc:  # a full or read-only disk: the job matters more
            self.dropped += 1
            self._once(
                f"write:{exc.errno}",
                f"cannot write {self.path}: {exc.strerror or exc}; "
                "samples are dropped until it can, the job goes on",
            )
            return
        self._written = _size(self.path)

    def _once(self, key: str, text: str) -> None:
        if key not in self._said:
            self._said.add(key)
            self._say(f"snrun: observe: {self.node}: {text}")

    def start(self, period: float) -> threading.Event:
        """Sample every ``period`` seconds in a daemon thread until the returned event is set
        (the first round at once)."""
        stop = threading.Event()

        def loop() -> None:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    self.round()
                except Exception as exc:  # never the agent's end
                    self._once("error", f"sampler error {type(exc).__name__}: {exc}")
                stop.wait(max(0.0, period - (time.monotonic() - started)))

        threading.Thread(target=loop, name="snrun-sampler", daemon=True).start()
        return stop


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _to_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def start_sampling(
    job_dir: Path,
    attempt: int,
    node: str,
    vendor: str,
    devices: tuple[int, ...],
    settings: ObserveSettings,
    environ: Mapping[str, str],
) -> threading.Event:
    """The agent's sampler for this node and attempt, started (an event that stops it);
    ``$SNRUN_SAMPLE_PERIOD=0`` turns it off (the event comes back set)."""
    period = sample_period(settings.sample_period, environ.get(PERIOD_ENV))
    if period <= 0:
        stop = threading.Event()
        stop.set()
        return stop
    sampler = Sampler(
        job_dir,
        attempt,
        node,
        devices=device_source(vendor, node, devices),
        max_bytes=int(settings.samples_mb * (1 << 20)),
    )
    return sampler.start(period)


def rank_env(settings: ObserveSettings, environ: Mapping[str, str]) -> dict[str, str]:
    """What the ranks' step hook and profiler window read (the user's values win)."""
    from slurm_supernode.runtime.comm_window import AFTER_ENV, STEPS_ENV

    wanted = {AFTER_ENV: str(settings.profile_after), STEPS_ENV: str(settings.profile_steps)}
    return {k: v for k, v in wanted.items() if not environ.get(k)}
