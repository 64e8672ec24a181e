"""NVML's clock event reasons (formerly "clocks throttle reasons"): why a GPU's clocks are below
their top now, a bit mask the sampler records (``DeviceSample.clock_reasons``), in words. The
bits are NVML's ABI (nvml.h ``nvmlClocksEventReason*``), stable across drivers. Pure."""

from __future__ import annotations

IDLE = 0x1
# what each bit says, in the order a reader wants them (what slows the device first)
_WORDS: tuple[tuple[int, str], ...] = (
    (0x40, "hw thermal slowdown"),
    (0x20, "sw thermal slowdown"),
    (0x80, "hw power brake"),
    (0x8, "hw slowdown"),
    (0x4, "sw power cap"),
    (0x2, "application clocks setting"),
    (0x10, "sync boost"),
    (0x100, "display clock setting"),
    (IDLE, "idle"),
)
# the reasons a healthy, busy device does not have: the device itself is held back
SLOWING = 0x40 | 0x20 | 0x80 | 0x8


def words(mask: int | None) -> list[str]:
    """The reasons set in ``mask``, in words; [] for none or unknown."""
    if not mask:
        return []
    known = [text for bit, text in _WORDS if mask & bit]
    rest = mask & ~sum(bit for bit, _ in _WORDS)
    return known + ([f"other (0x{rest:x})"] if rest else [])


def is_idle(mask: int | None) -> bool:
    return mask is not None and bool(mask & IDLE)
