"""A node's accelerators at one time: NVML (nvidia-ml-py's ``pynvml``) on NVIDIA nodes, the
text of ``npu-smi info`` on Ascend nodes. Each source returns the samples it could take and,
in words, what it could not (no library, no driver, a device gone): the sampler records that
and the job goes on.

NVML is imported and initialised here only, in the agent (never in a rank); a device whose
handle or figures fail (lost mid-job, Xid 79) is left out of that round and named. ECC is the
volatile uncorrected count; Xid is the last critical-error event NVML delivered since the
sampler registered for them (none registered where NVML refuses, e.g. without permission).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from slurm_supernode.observe.records import DeviceSample

Missing = dict[str, str]  # what -> why


class NvmlDevices:
    """The node's NVIDIA devices ``indexes`` (nvidia-smi's numbering: PCI bus order)."""

    def __init__(self, node: str, indexes: Sequence[int], nvml: Any = None) -> None:
        self.node, self.indexes = node, tuple(indexes)
        self._nvml = nvml  # the pynvml module (tests pass a stand-in)
        self._why: str | None = None
        self._events: Any = None
        self._opened = False

    def _open(self) -> None:
        self._opened = True
        try:
            if self._nvml is None:
                import pynvml

                self._nvml = pynvml
            self._nvml.nvmlInit()
        except ImportError as exc:
            self._why = f"NVML not available ({exc}): install nvidia-ml-py"
            return
        except Exception as exc:
            self._why = f"NVML did not start: {exc}"
            return
        self._register_xid()

    def _register_xid(self) -> None:
        nvml = self._nvml
        try:
            events = nvml.nvmlEventSetCreate()
            for i in self.indexes:
                handle = nvml.nvmlDeviceGetHandleByIndex(i)
                nvml.nvmlDeviceRegisterEvents(handle, nvml.nvmlEventTypeXidCriticalError, events)
            self._events = events
        except Exception:  # Xid events need privileges on some drivers: figures without them
            self._events = None

    def read(self, now: float) -> tuple[list[DeviceSample], Missing]:
        if not self._opened:
            self._open()
        if self._why is not None:
            return [], {"devices": self._why}
        xids = self._xids()
        out, missing = [], {}
        for i in self.indexes:
            try:
                out.append(self._sample(now, i, xids.get(i)))
            except Exception as exc:  # the device is gone or broken: the others go on
                missing[f"device {i}"] = f"NVML: {exc}"
        return out, missing

    def _sample(self, now: float, index: int, xid: int | None) -> DeviceSample:
        nvml = self._nvml
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        mem = _memory(nvml, handle)
        return DeviceSample(
            t=now,
            node=self.node,
            index=index,
            util_percent=float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu),
            mem_used_bytes=int(mem.used),
            mem_total_bytes=int(mem.total),
            temperature_c=_or_none(lambda: float(nvml.nvmlDeviceGetTemperature(handle, 0))),
            power_w=_or_none(lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0),
            sm_clock_mhz=_or_none(
                lambda: float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
            ),
            ecc_errors=_or_none(
                lambda: int(
                    nvml.nvmlDeviceGetTotalEccErrors(
                        handle, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC
                    )
                )
            ),
            xid=xid,
            clock_reasons=_or_none(lambda: int(_clock_reasons(nvml, handle))),
            max_sm_clock_mhz=_or_none(
                lambda: float(nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM))
            ),
        )

    def _xids(self) -> dict[int, int]:
        """The Xid events waiting since the last round: device index -> the last Xid."""
        out: dict[int, int] = {}
        if self._events is None:
            return out
        nvml = self._nvml
        for _ in range(64):
            try:
                data = nvml.nvmlEventSetWait(self._events, 0)
            except Exception:  # a timeout: nothing waiting
                break
            try:
                index = nvml.nvmlDeviceGetIndex(data.device)
            except Exception:
                continue
            out[int(index)] = int(data.eventData)
        return out


def _memory(nvml: Any, handle: Any) -> Any:
    """Memory in use as nvidia-smi shows it: NVML's v2 record leaves out what the driver
    reserves (v1 counts it as used: 614 MiB more on an H200, measured); v1 where v2 is not."""
    try:
        return nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2)
    except Exception:
        return nvml.nvmlDeviceGetMemoryInfo(handle)


def _clock_reasons(nvml: Any, handle: Any) -> Any:
    """Why the clocks are below their top now (a bit mask): NVML's "clocks event reasons"
    (driver >= 535), formerly its "clocks throttle reasons" (the same bits)."""
    get = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
    if get is None:
        get = nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    return get(handle)


def _or_none(get: Callable[[], Any]) -> Any:
    """A figure the device may not have (no ECC, no power sensor): None instead."""
    try:
        return get()
    except Exception:
        return None


_HEALTH = ("OK", "Warning", "Alarm", "Critical")
_BUS_ID = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$")
_HEALTH_CODE = {"OK": 0, "Warning": 1, "Alarm": 2, "Critical": 3}


def parse_npu_smi_info(text: str, node: str, now: float) -> list[DeviceSample]:
    """``npu-smi info``'s table -> one sample per chip (its logical index, in order).

    Each chip is two rows: ``| NPU Name | Health | Power(W) Temp(C) Hugepages |`` then
    ``| Chip | Bus-Id | AICore(%) Memory-Usage(MB) HBM-Usage(MB) |``; the NPU row is shared by
    the chips below it (Atlas A3: two dies). Utilization is AICore %, memory HBM use;
    ``xid`` carries the health as a code (0 OK, 1 Warning, 2 Alarm, 3 Critical): npu-smi has
    no Xid, and its health is the nearest equivalent. The process table below is skipped."""
    out: list[DeviceSample] = []
    npu: tuple[float | None, float | None, int] | None = None  # power, temperature, health
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3:
            continue
        first = cells[1].split(" ")[0]
        if first in _HEALTH and cells[0][:1].isdigit():
            values = cells[2].split()
            npu = (_num(values, 0), _num(values, 1), _HEALTH_CODE[first])
        elif npu is not None and _BUS_ID.match(cells[1]):
            used, total = _hbm(cells[2])
            values = cells[2].split()
            out.append(
                DeviceSample(
                    t=now,
                    node=node,
                    index=len(out),
                    util_percent=_num(values, 0),
                    mem_used_bytes=used,
                    mem_total_bytes=total,
                    temperature_c=npu[1],
                    power_w=npu[0],
                    xid=npu[2],
                )
            )
    return out


def _num(values: Sequence[str], i: int) -> float | None:
    try:
        return float(values[i])
    except (IndexError, ValueError):
        return None


def _hbm(cell: str) -> tuple[int | None, int | None]:
    """The last ``used / total`` pair of the chip row (HBM, MB) in bytes."""
    pairs = re.findall(r"(\d+)\s*/\s*(\d+)", cell)
    if not pairs:
        return None, None
    used, total = pairs[-1]
    return int(used) << 20, int(total) << 20


class NpuSmiDevices:
    """The node's Ascend devices through ``npu-smi info`` (the devices of this job only)."""

    def __init__(
        self,
        node: str,
        indexes: Sequence[int],
        run: Callable[[list[str], float], tuple[int, str]] | None = None,
    ) -> None:
        self.node, self.indexes = node, set(indexes)
        if run is None:
            from slurm_supernode.tools import run_tool

            run = run_tool
        self._run = run

    def read(self, now: float) -> tuple[list[DeviceSample], Missing]:
        code, text = self._run(["npu-smi", "info"], 10.0)
        if code != 0:
            first = (text.strip().splitlines() or ["no output"])[0]
            return [], {"devices": f"npu-smi info failed ({code}): {first[:200]}"}
        samples = [s for s in parse_npu_smi_info(text, self.node, now) if s.index in self.indexes]
        gone = sorted(self.indexes - {s.index for s in samples})
        missing = {f"device {i}": "not in npu-smi info's table" for i in gone}
        return samples, missing
