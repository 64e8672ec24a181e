"""What an Ascend node reads about itself at job start (filled by runtime/ascend.py): each
device's IP, SDID and SuperPoD, and why a value could not be read. The rank table takes every
value HCCL interprets from here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class DeviceFacts:
    """One device as its node's tools report it. ``None``: the tool gave nothing."""

    device_id: int  # physical id: /dev/davinciN, hccn_tool -i N, rank table device_id
    npu_id: int | None = None  # npu-smi -i (card) and -c (chip) of this device
    chip_id: int | None = None
    device_ip: str | None = None
    ip_source: str | None = None  # "hccn_tool" or the hccn.conf path
    sdid: int | None = None  # npu-smi spod-info "SDID"
    super_pod_id: str | None = None  # npu-smi spod-info "Super Pod ID"
    server_index: int | None = None  # npu-smi spod-info "Server Index"


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """Everything one node read at job start, plus why something could not be read."""

    hostname: str
    devices: tuple[DeviceFacts, ...] = ()
    # Why there are no SDIDs: "npu-smi not found", "... does not support querying spod-info".
    sdid_note: str | None = None
    sdid_unsupported: bool = False  # the device says it has no SuperPoD (e.g. Atlas A2)
    ip_note: str | None = None  # why device IPs are missing (no hccn_tool, no hccn.conf)
    _by_id: dict[int, DeviceFacts] = field(
        init=False, default_factory=dict, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {d.device_id: d for d in self.devices})

    def device(self, device_id: int) -> DeviceFacts:
        return self._by_id.get(device_id) or DeviceFacts(device_id)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("_by_id", None)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodeFacts:
        devices = tuple(DeviceFacts(**d) for d in data.get("devices") or ())
        keep = {k: data[k] for k in ("sdid_note", "sdid_unsupported", "ip_note") if k in data}
        return cls(hostname=data["hostname"], devices=devices, **keep)


def decode_sdid(sdid: int) -> tuple[int, int, int, int]:
    """(server index, chip id, die id, device id) of an SDID (Ascend DCMI bit layout: 22-31
    server index, 18-21 chip, 16-17 die, 0-15 device = chip x 2 + die)."""
    return (sdid >> 22) & 0x3FF, (sdid >> 18) & 0xF, (sdid >> 16) & 0x3, sdid & 0xFFFF
