"""The agent's sampler: node figures from /proc text, devices through NVML (a stand-in for
pynvml) and npu-smi (recorded output), and what it does when something is missing."""

from __future__ import annotations

import errno
from pathlib import Path
from types import SimpleNamespace

import pytest

from slurm_supernode.observe.records import DeviceSample, NodeSample, read, samples_path
from slurm_supernode.runtime.device_stats import NpuSmiDevices, NvmlDevices, parse_npu_smi_info
from slurm_supernode.runtime.node_stats import (
    NodeStats,
    parse_cpu_times,
    parse_meminfo,
    parse_net_dev,
)
from slurm_supernode.runtime.sampler import Sampler, sample_period

DATA = Path(__file__).resolve().parents[1] / "data" / "ascend"

STAT = "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 50 0 50 400 0 0 0 0 0 0\n"
STAT2 = "cpu  200 0 200 1400 0 0 0 0 0 0\n"
MEMINFO = "MemTotal:       16000 kB\nMemFree:         1000 kB\nMemAvailable:    4000 kB\n"
NET = (DATA.parent / "proc-net-dev.txt").read_text()


def test_proc_parsers():
    assert parse_cpu_times(STAT) == (200, 1000)
    assert parse_meminfo(MEMINFO) == (12000 * 1024, 16000 * 1024)
    assert parse_meminfo("MemTotal: 5 kB\n") is None  # no MemAvailable: no guess
    assert parse_net_dev(NET) == ({"eth0": 12345, "ib0": 500}, {"eth0": 67890, "ib0": 700})


def test_node_stats_cpu_share_between_reads(tmp_path):
    files = {"/p/stat": STAT, "/p/meminfo": MEMINFO, "/p/net/dev": NET}
    stats = NodeStats("n1", str(tmp_path), proc="/p", reader=files.get)
    first = stats.read(1.0)
    assert first.cpu_percent is None  # no interval yet
    assert first.mem_used_bytes == 12000 * 1024 and first.nic_rx_bytes["eth0"] == 12345
    assert first.disk_total_bytes and first.disk_used_bytes is not None
    files["/p/stat"] = STAT2
    assert stats.read(2.0).cpu_percent == pytest.approx(100 * 200 / 800, abs=0.1)


class FakeNvml:
    """pynvml's calls the sampler makes; ``lost`` devices raise as a GPU fallen off the bus."""

    NVML_CLOCK_SM = 1
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
    NVML_VOLATILE_ECC = 0
    nvmlEventTypeXidCriticalError = 8

    def __init__(self, lost=(), fail_init=None):
        self.lost, self.fail_init, self.events = set(lost), fail_init, [(1, 79)]

    def nvmlInit(self):
        if self.fail_init:
            raise RuntimeError(self.fail_init)

    def nvmlDeviceGetHandleByIndex(self, i):
        if i in self.lost:
            raise RuntimeError("GPU is lost")
        return i

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(used=(h + 1) << 30, total=80 << 30)

    def nvmlDeviceGetUtilizationRates(self, h):
        return SimpleNamespace(gpu=90 + h)

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 60

    def nvmlDeviceGetPowerUsage(self, h):
        return 350500

    def nvmlDeviceGetClockInfo(self, h, clock):
        return 1980

    def nvmlDeviceGetTotalEccErrors(self, h, kind, counter):
        raise RuntimeError("Not Supported")  # ECC off: the figure is None, not an error

    def nvmlEventSetCreate(self):
        return "set"

    def nvmlDeviceRegisterEvents(self, h, kind, events):
        pass

    def nvmlEventSetWait(self, events, timeout):
        if not self.events:
            raise RuntimeError("Timeout")
        device, xid = self.events.pop()
        return SimpleNamespace(device=device, eventData=xid)

    def nvmlDeviceGetIndex(self, h):
        return h


def test_nvml_figures_xid_and_a_device_lost_mid_job():
    nvml = FakeNvml()
    source = NvmlDevices("n1", (0, 1), nvml=nvml)
    samples, missing = source.read(5.0)
    assert missing == {}
    assert [s.index for s in samples] == [0, 1]
    s1 = samples[1]
    assert (s1.util_percent, s1.mem_used_bytes, s1.power_w, s1.sm_clock_mhz) == (
        91.0,
        2 << 30,
        350.5,
        1980.0,
    )
    assert s1.ecc_errors is None and s1.xid == 79 and samples[0].xid is None
    nvml.lost.add(1)  # the device vanishes: the other is still sampled, the loss is named
    samples, missing = source.read(6.0)
    assert [s.index for s in samples] == [0]
    assert missing == {"device 1": "NVML: GPU is lost"}


def test_nvml_missing_or_failing_is_said_not_raised():
    samples, missing = NvmlDevices("n1", (0,), nvml=FakeNvml(fail_init="Driver Not Loaded")).read(1)
    assert samples == [] and "NVML did not start: Driver Not Loaded" in missing["devices"]


def test_npu_smi_info_recorded_output():
    text = (DATA / "npu-smi-info-910b.txt").read_text()
    samples = parse_npu_smi_info(text, "a1", 3.0)
    assert [s.index for s in samples] == [0, 1]  # the process table is not a device
    s0, s1 = samples
    assert (s0.util_percent, s0.power_w, s0.temperature_c) == (37.0, 93.2, 45.0)
    assert (s0.mem_used_bytes, s0.mem_total_bytes) == (3161 << 20, 65536 << 20)
    assert s1.mem_used_bytes == 60513 << 20 and s1.xid == 1  # Warning
    source = NpuSmiDevices("a1", (1, 3), run=lambda argv, timeout: (0, text))
    got, missing = source.read(3.0)
    assert [s.index for s in got] == [1] and missing == {"device 3": "not in npu-smi info's table"}
    failing = NpuSmiDevices("a1", (0,), run=lambda argv, t: (127, "npu-smi: not found"))
    assert failing.read(1.0) == ([], {"devices": "npu-smi info failed (127): npu-smi: not found"})


def _sampler(tmp_path, devices, **kw):
    said: list[str] = []
    clock = iter(float(i) for i in range(100))
    sampler = Sampler(
        tmp_path,
        2,
        "n1",
        devices=devices,
        max_bytes=kw.pop("max_bytes", 1 << 20),
        say=said.append,
        clock=lambda: next(clock),
        **kw,
    )
    return sampler, said


def test_sampler_writes_per_attempt_and_says_what_is_missing_once(tmp_path):
    sampler, said = _sampler(tmp_path, NvmlDevices("n1", (0,), nvml=FakeNvml(fail_init="no")))
    sampler.round()
    sampler.round()
    records = list(read(samples_path(tmp_path, 2, "n1")))
    assert [type(r) for r in records] == [NodeSample, NodeSample]
    assert records[-1].missing == {"devices": "NVML did not start: no"}
    assert len(said) == 1 and "devices not sampled" in said[0] and "job goes on" in said[0]
    sampler2, _ = _sampler(tmp_path, NvmlDevices("n1", (0, 1), nvml=FakeNvml()))
    sampler2.round()
    kinds = [type(r) for r in read(samples_path(tmp_path, 2, "n1"))]
    assert kinds[2:] == [NodeSample, DeviceSample, DeviceSample]
    assert not samples_path(tmp_path, 3, "n1").exists()  # another attempt, another file


def test_sampler_full_disk_and_cap(tmp_path, monkeypatch):
    sampler, said = _sampler(tmp_path, None, max_bytes=600)

    def full(path, records):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("slurm_supernode.runtime.sampler.append", full)
    sampler.round()
    sampler.round()
    assert sampler.dropped == 2 and len(said) == 1 and "No space left" in said[0]
    monkeypatch.undo()
    for _ in range(5):
        sampler.round()
    size = samples_path(tmp_path, 2, "n1").stat().st_size
    assert 600 <= size < 1200  # stopped at the cap, said so once
    assert sum("samples_mb" in s for s in said) == 1


def test_sample_period_override(capsys):
    assert sample_period(10.0, None) == 10.0
    assert sample_period(10.0, "1.5") == 1.5
    assert sample_period(10.0, "0") == 0.0  # off
    assert sample_period(10.0, "soon") == 10.0
    assert "SNRUN_SAMPLE_PERIOD='soon'" in capsys.readouterr().err
