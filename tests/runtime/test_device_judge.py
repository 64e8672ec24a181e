"""The slow GPU named from its devices' NVML samples (a stand-in for pynvml, as the sampler's
tests use): its SM clock against the peers' while every rank's busy time is equal, with the
clock reasons in words; never an idle or healthy device."""

from __future__ import annotations

from pathlib import Path

from slurm_supernode.observe.clock_reasons import words
from slurm_supernode.observe.records import (
    DeviceSample,
    StepRecord,
    append,
    read,
    slow_path,
    steps_path,
)
from slurm_supernode.runtime.device_judge import DeviceJudge
from slurm_supernode.runtime.device_stats import NvmlDevices
from slurm_supernode.runtime.sampler import Sampler
from slurm_supernode.runtime.slow_judge import SlowJudge
from tests.runtime.test_observe_sampling import FakeNvml

NODES = {"n1": "sn1", "n2": "sn1", "n3": "sn2"}
HW_THERMAL, SW_THERMAL, POWER_CAP, IDLE = 0x40, 0x20, 0x4, 0x1


class ClockNvml(FakeNvml):
    """A node's GPUs with their own clocks, clock reasons, utilization and power."""

    def __init__(self, clocks, reasons=None, util=99, power=690.0):
        super().__init__()
        self.events = []
        self.clocks, self.reasons = clocks, reasons or {}
        self.util, self.power = util, power

    def nvmlDeviceGetClockInfo(self, h, clock):
        return self.clocks[h]

    def nvmlDeviceGetMaxClockInfo(self, h, clock):
        return 1980

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return self.reasons.get(h, 0)

    def nvmlDeviceGetUtilizationRates(self, h):
        return type("U", (), {"gpu": self.util})()

    def nvmlDeviceGetPowerUsage(self, h):
        return int((310.0 if self.reasons.get(h) else self.power) * 1000)


def _samplers(tmp_path: Path, nvmls: dict[str, ClockNvml]) -> list[Sampler]:
    clock = [100.0]
    return [
        Sampler(
            tmp_path,
            0,
            node,
            devices=NvmlDevices(node, (0, 1, 2, 3), nvml=nvml),
            max_bytes=1 << 20,
            say=lambda _: None,
            clock=lambda: clock[0],
        )
        for node, nvml in nvmls.items()
    ]


def _equal_busy_steps(tmp_path: Path, k: int) -> None:
    """Every rank busy 95 ms of a 100 ms step: it spins while it waits for the device."""
    for rank, node in enumerate(NODES):
        steps = [
            StepRecord(t=k, rank=rank, node=node, step=2 + 3 * k + i, seconds=0.1, busy_s=0.095)
            for i in range(3)
        ]
        append(steps_path(tmp_path, 0, rank), steps)


def test_a_thermally_throttled_gpu_is_named_though_busy_times_are_equal(tmp_path):
    healthy = {i: 1980 for i in range(4)}
    nvmls = {
        "n1": ClockNvml(healthy),
        "n2": ClockNvml({0: 1965, 1: 1980, 2: 1980, 3: 1950}),
        "n3": ClockNvml({0: 1980, 1: 1980, 2: 1100, 3: 1980}, {2: HW_THERMAL | SW_THERMAL}),
    }
    samplers = _samplers(tmp_path, nvmls)
    judge = SlowJudge(tmp_path, 0, NODES, slow_pct=20, windows=3, window=5.0)
    judge.look(0.0)
    marks = []
    for k in range(3):
        _equal_busy_steps(tmp_path, k)
        for sampler in samplers:
            sampler.round()
        marks += judge.look(5.0 * (k + 1))
        assert bool(marks) == (k == 2)  # three samples in a row, not before
    assert [m.node for m in marks] == ["n3"] and marks[0].supernode == "sn2"
    evidence = marks[0].evidence
    assert evidence.startswith("gpu2 on n3: SM clock 1.10 GHz of 1.98 GHz top, peers 1.98 GHz")
    assert "the median of 11 other device(s)" in evidence
    assert "clock reasons: hw thermal slowdown, sw thermal slowdown" in evidence
    assert "power 310 W (peers 690 W)" in evidence and "utilization 99% (peers 99%)" in evidence
    assert 1.7 < marks[0].ratio < 1.9
    assert [m.node for m in read(slow_path(tmp_path, 0))] == ["n3"]


def _sample(node, index, t, clock, util=99.0, reasons=None):
    return DeviceSample(
        t=t, node=node, index=index, util_percent=util, sm_clock_mhz=clock, clock_reasons=reasons
    )


def test_healthy_spread_and_idle_devices_name_nobody():
    judge = DeviceJudge(slow_pct=20, windows=2)
    for t in range(5):
        spread = [_sample(f"n{i}", 0, t, 1980 - 40 * i) for i in range(4)]  # 8% spread
        idle = [_sample("n9", 0, t, 210, util=0.0, reasons=IDLE)]  # waits: low clock, idle
        light = [_sample("n8", 0, t, 800, util=30.0)]  # little work: its clock says nothing
        assert judge.judge(spread + idle + light, float(t)) == []
    # the whole job idle between phases (evaluation, a checkpoint): nobody either
    all_idle = [_sample(f"n{i}", 0, 9, 300 + 10 * i, util=0.0, reasons=IDLE) for i in range(4)]
    assert judge.judge(all_idle, 9.0) == []


def test_a_slow_streak_broken_by_one_good_sample_starts_again():
    judge = DeviceJudge(slow_pct=20, windows=3)
    peers = lambda t: [_sample(n, 0, t, 1980) for n in ("a", "b")]  # noqa: E731
    got = []
    for t, clock in enumerate([1100, 1100, 1900, 1100, 1100]):
        got += judge.judge([*peers(t), _sample("c", 0, t, clock, reasons=POWER_CAP)], float(t))
    assert got == []
    got = judge.judge([*peers(6), _sample("c", 0, 6, 1100, reasons=POWER_CAP)], 6.0)
    assert [(s.node, s.index) for s in got] == [("c", 0)]
    assert "clock reasons: sw power cap" in got[0].evidence


def test_nodes_sampled_at_their_own_phase_are_judged_against_the_newest_peers():
    judge = DeviceJudge(slow_pct=20, windows=2)
    assert judge.judge([_sample("a", 0, 0, 1980), _sample("b", 0, 1, 1970)], 2.0) == []
    assert judge.judge([_sample("c", 0, 6, 1000)], 7.0) == []  # a window with c's sample only
    got = judge.judge([_sample("c", 0, 16, 1000)], 17.0)
    assert [s.node for s in got] == ["c"] and "clock reasons unknown" in got[0].evidence
    # a peer whose sampler stopped long ago is no peer: alone, c is not judged
    judge2 = DeviceJudge(slow_pct=20, windows=1)
    judge2.judge([_sample("a", 0, 0, 1980)], 0.0)
    assert judge2.judge([_sample("c", 0, 100, 1000)], 100.0) == []


def test_clock_reasons_through_the_sampler_and_in_words():
    nvml = ClockNvml({0: 1500}, {0: POWER_CAP | IDLE})
    (sample,), missing = NvmlDevices("n1", (0,), nvml=nvml).read(1.0)
    assert missing == {} and sample.clock_reasons == 5 and sample.max_sm_clock_mhz == 1980
    assert words(sample.clock_reasons) == ["sw power cap", "idle"]

    class OldNvml(FakeNvml):  # a driver before 535: the same bits under the old name
        def nvmlDeviceGetCurrentClocksThrottleReasons(self, h):
            return HW_THERMAL

    (old,), _ = NvmlDevices("n1", (0,), nvml=OldNvml()).read(1.0)
    assert words(old.clock_reasons) == ["hw thermal slowdown"] and old.max_sm_clock_mhz is None
    assert words(0x1000) == ["other (0x1000)"] and words(None) == []
