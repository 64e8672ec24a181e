"""The slow GPU, named from the devices' own figures: the second half of the slow-node judge
(``runtime/slow_judge``), for what busy (CPU) time misses.

In synchronous training on GPUs every rank's step lasts equally long, and a rank waiting for a
slow device may spin on its CPU, so its busy time looks like its peers'. The device itself says
it is slow: its SM clock, held down by heat, a power cap or a power brake, is below the clocks
of the job's other devices while all of them work. Each device's SM clock (the agent's NVML
samples, ``DeviceSample.sm_clock_mhz``) is judged against the median of its PEERS (every other
device of the job, on any node: ``observe/peers``, the doctor's rule for a device's matmul
rate): more than ``slow_pct`` % below it in ``windows`` consecutive samples of that device, as
the step judge asks, and the node is named with the device's evidence in words: clock, the
peers' clock, NVML's clock event reasons, power and utilization against the peers'.

Never a healthy device for an idle one: a sample counts only while the device works
(utilization >= ``BUSY_UTIL`` % and no "idle" clock reason), on both sides of the comparison;
a device whose newest sample is idle starts its streak again. Peers are the other devices'
newest busy samples of the last ``FRESH_S`` seconds (the nodes' samplers run at their own
phases: a window holds some nodes' samples and not others'). Ascend's npu-smi gives no clock:
its devices are not judged here.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from slurm_supernode.observe.clock_reasons import SLOWING, is_idle, words
from slurm_supernode.observe.peers import below_peers
from slurm_supernode.observe.records import DeviceSample

BUSY_UTIL = 50.0  # % utilization below which a device's clock says nothing about its speed
FRESH_S = 60.0  # a peer's newest sample older than this is left out (its sampler stopped)

Key = tuple[str, int]  # (node, device index)


@dataclass(frozen=True)
class SlowDevice:
    """A device slow in ``windows`` samples in a row: its node is named with this evidence."""

    node: str
    index: int
    ratio: float  # the peers' median clock over this device's (> 1: slower)
    evidence: str


@dataclass
class DeviceJudge:
    slow_pct: float = 20.0
    windows: int = 3
    _newest: dict[Key, DeviceSample] = field(default_factory=dict)
    _streak: dict[Key, list[float]] = field(default_factory=dict)

    def judge(self, samples: Iterable[DeviceSample], now: float) -> list[SlowDevice]:
        """Take the devices' new samples; the devices slow in ``windows`` of their own samples
        in a row (each device named once per run of slow samples: the caller marks nodes once)."""
        fresh: dict[Key, DeviceSample] = {}
        for s in sorted(samples, key=lambda s: s.t):
            fresh[(s.node, s.index)] = s
        self._newest.update(fresh)
        peers = {
            k: s
            for k, s in self._newest.items()
            if now - s.t <= FRESH_S and _busy(s) and s.sm_clock_mhz
        }
        out = []
        for key, sample in sorted(fresh.items()):
            if key not in peers or len(peers) < 2:
                self._streak.pop(key, None)  # idle, no clock, or nothing to compare: no case
                continue
            keys = [key, *(k for k in sorted(peers) if k != key)]
            clocks = [float(peers[k].sm_clock_mhz or 0) for k in keys]
            if 0 not in below_peers(clocks, self.slow_pct):
                self._streak.pop(key, None)
                continue
            center = statistics.median(clocks[1:])
            streak = self._streak.setdefault(key, [])
            streak.append(center / clocks[0])
            if len(streak) == self.windows:
                others = [peers[k] for k in keys[1:]]
                out.append(self._slow(sample, others, center, streak))
        return out

    def _slow(
        self, sample: DeviceSample, others: list[DeviceSample], center: float, streak: list[float]
    ) -> SlowDevice:
        ratio = statistics.median(streak)
        reasons = words(sample.clock_reasons)
        said = (
            f"clock reasons: {', '.join(reasons)}"
            if reasons
            else "no clock reason given"
            if sample.clock_reasons is not None
            else "clock reasons unknown"
        )
        if sample.clock_reasons and not sample.clock_reasons & SLOWING:
            said += " (none that holds the device back by itself)"
        top = f" of {_ghz(sample.max_sm_clock_mhz)} top" if sample.max_sm_clock_mhz else ""
        extra = [
            f"{what} {_fig(mine, unit)} (peers {_fig(theirs, unit)})"
            for what, unit, mine, theirs in (
                ("power", "W", sample.power_w, _median(o.power_w for o in others)),
                ("utilization", "%", sample.util_percent, _median(o.util_percent for o in others)),
                (
                    "temperature",
                    "C",
                    sample.temperature_c,
                    _median(o.temperature_c for o in others),
                ),
            )
            if mine is not None and theirs is not None
        ]
        evidence = (
            f"gpu{sample.index} on {sample.node}: SM clock {_ghz(sample.sm_clock_mhz)}{top}, "
            f"peers {_ghz(center)} (the median of {len(others)} other device(s)); "
            f"{ratio:.2f}x slower (median) in {len(streak)} samples in a row "
            f"(slow below {1 - self.slow_pct / 100:.2f}x of the peers); {said}"
            + (f"; {', '.join(extra)}" if extra else "")
        )
        return SlowDevice(sample.node, sample.index, ratio, evidence)


def _busy(sample: DeviceSample) -> bool:
    util = sample.util_percent
    return util is not None and util >= BUSY_UTIL and not is_idle(sample.clock_reasons)


def _median(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _ghz(mhz: float | None) -> str:
    return "unknown" if mhz is None else f"{mhz / 1000:.2f} GHz"


def _fig(value: float, unit: str) -> str:
    return f"{value:.0f}{'' if unit == '%' else ' '}{unit}"
