"""Node health checks as small pure functions: inputs in, a ``CheckResult`` out.

Every check gets what it looks at as arguments (device paths found, a tool's output, free
bytes), so each rule is testable without hardware; ``probe.py`` gathers the inputs on the
node. Status codes are Nagios' (0 ok, 1 warning, 2 critical, 3 unknown) so the result can
feed Slurm's HealthCheckProgram, a prolog, NHC-like wrappers or a monitoring system alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from slurm_supernode.hostlist import HostlistError, expand_paths

OK, WARNING, CRITICAL, UNKNOWN = 0, 1, 2, 3
STATUS_NAMES = {OK: "OK", WARNING: "WARNING", CRITICAL: "CRITICAL", UNKNOWN: "UNKNOWN"}
DRAIN_PREFIX = "snrun:"

# XIDs that mean the GPU (or its NVLink) needs a reset or service: the node must not take jobs.
# 48 double-bit ECC, 62/119/120 GSP/firmware, 63/64 row remapping, 74 NVLink, 79 fell off the
# bus, 92 high single-bit ECC rate, 94/95 contained/uncontained ECC, 140 unrecovered ECC.
FATAL_XIDS = frozenset({48, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140})
_XID = re.compile(r"NVRM: Xid \(([^)]*)\): (\d+)")


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check's verdict; ``message`` is one line a person can act on."""

    name: str
    status: int
    message: str

    @property
    def status_name(self) -> str:
        return STATUS_NAMES[self.status]


class HasStatus(Protocol):
    """A check's result or a doctor finding: anything with a Nagios status."""

    @property
    def status(self) -> int: ...


def overall_status(results: Iterable[HasStatus]) -> int:
    """The worst status: CRITICAL > WARNING > UNKNOWN > OK (an unknown check must not hide a
    failing one, and must not pass as ok either)."""
    statuses = {r.status for r in results}
    for status in (CRITICAL, WARNING, UNKNOWN):
        if status in statuses:
            return status
    return OK


def device_paths(pattern: str | None, vendor: str, devices: int) -> list[str]:
    """Device files a node should have: the site's ``gres_file`` hostlist pattern
    (``/dev/nvidia[0-7]``) or the vendor's default names for ``devices`` devices."""
    if pattern:
        try:
            return expand_paths(pattern)
        except HostlistError:
            return [pattern]
    stem = "/dev/davinci" if vendor == "ascend" else "/dev/nvidia"
    return [f"{stem}{i}" for i in range(devices)]


def check_devices(candidates: Sequence[str], present: Iterable[str], expected: int) -> CheckResult:
    """Devices visible vs expected: fewer than ``expected`` of ``candidates`` is critical."""
    found = [p for p in candidates if p in set(present)]
    if expected <= 0:
        return CheckResult("devices", UNKNOWN, "no device count expected for this node")
    missing = [p for p in candidates if p not in set(found)]
    if len(found) < expected:
        what = f"missing {','.join(missing[:4])}{'...' if len(missing) > 4 else ''}"
        return CheckResult(
            "devices",
            CRITICAL,
            f"{len(found)} of {expected} devices visible" + (f" ({what})" if missing else ""),
        )
    return CheckResult("devices", OK, f"{len(found)} of {expected} devices visible")


def _num(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None  # "[N/A]", "N/A", "" -> None


def check_nvidia_smi(returncode: int, output: str) -> CheckResult:
    """``nvidia-smi --query-gpu=index,ecc.errors.uncorrected.volatile.total,
    remapped_rows.pending,remapped_rows.failure --format=csv,noheader,nounits``.

    A failing nvidia-smi or uncorrected ECC errors / failed row remapping are critical; a
    pending row remap (needs a GPU reset) is a warning.
    """
    if returncode != 0:
        first = (output.strip().splitlines() or ["no output"])[0]
        return CheckResult("nvidia-smi", CRITICAL, f"nvidia-smi failed ({returncode}): {first}")
    crit, warn, gpus = [], [], 0
    for line in output.strip().splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) < 4:
            continue
        gpus += 1
        gpu, ecc, pending, failure = cols[0], _num(cols[1]), _num(cols[2]), _num(cols[3])
        if ecc:
            crit.append(f"GPU {gpu}: {ecc} uncorrected ECC errors")
        if failure:
            crit.append(f"GPU {gpu}: row remapping failed")
        if pending:
            warn.append(f"GPU {gpu}: row remap pending (reset the GPU)")
    return _verdict("nvidia-smi", crit, warn, f"{gpus} GPUs without ECC/remap errors")


def check_xids(kernel_log: str, fatal: frozenset[int] = FATAL_XIDS) -> CheckResult:
    """NVIDIA Xid events in the kernel log (``dmesg``): a fatal one is critical, others warn."""
    seen: dict[int, set[str]] = {}
    for m in _XID.finditer(kernel_log):
        seen.setdefault(int(m.group(2)), set()).add(m.group(1))
    if not seen:
        return CheckResult("xid", OK, "no Xid events in the kernel log")
    text = "; ".join(f"Xid {x} on {','.join(sorted(p))}" for x, p in sorted(seen.items()))
    return CheckResult("xid", CRITICAL if set(seen) & fatal else WARNING, text)


def check_npu_smi(returncode: int, output: str) -> CheckResult:
    """``npu-smi info``: its table's Health column (OK, Warning, Alarm, Critical)."""
    if returncode != 0:
        first = (output.strip().splitlines() or ["no output"])[0]
        return CheckResult("npu-smi", CRITICAL, f"npu-smi failed ({returncode}): {first}")
    bad, warn, npus = [], [], 0
    for line in output.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].split(" ")[0].isdigit():
            continue
        health = cells[1].split(" ")[0]
        if health not in ("OK", "Warning", "Alarm", "Critical"):
            continue
        npus += 1
        npu = cells[0].split(" ")[0]
        if health in ("Alarm", "Critical"):
            bad.append(f"NPU {npu}: {health}")
        elif health == "Warning":
            warn.append(f"NPU {npu}: Warning")
    return _verdict("npu-smi", bad, warn, f"{npus} NPUs healthy")


def _verdict(name: str, critical: list[str], warnings: list[str], ok: str) -> CheckResult:
    """CRITICAL when anything is critical (warnings listed after), else WARNING, else OK."""
    if critical:
        return CheckResult(name, CRITICAL, "; ".join(critical + warnings))
    if warnings:
        return CheckResult(name, WARNING, "; ".join(warnings))
    return CheckResult(name, OK, ok)


def check_imex(channels: Sequence[str] | None) -> CheckResult:
    """IMEX channel devices (multi-node NVLink): none, or no such directory, is critical."""
    if not channels:
        return CheckResult(
            "imex",
            CRITICAL,
            "no IMEX channel devices in /dev/nvidia-caps-imex-channels (is nvidia-imex running?)",
        )
    return CheckResult("imex", OK, f"{len(channels)} IMEX channel device(s)")


def check_free_space(path: str, free_bytes: int | None, min_gb: float) -> CheckResult:
    """Free space where jobs write: below ``min_gb`` (10^9 bytes) is critical."""
    if free_bytes is None:
        return CheckResult("disk", CRITICAL, f"{path}: not accessible")
    free_gb = free_bytes / 1e9
    if free_gb < min_gb:
        return CheckResult("disk", CRITICAL, f"{path}: {free_gb:.1f} GB free < {min_gb:g} GB")
    return CheckResult("disk", OK, f"{path}: {free_gb:.1f} GB free")


# -- what to do with the node (NHC's convention) ----------------------------------------------
def node_action(
    status: int, drained: bool, reason: str | None, *, drain: bool, resume_ok: bool
) -> str | None:
    """``"drain"``, ``"resume"`` or None for a node in this state with this check status.

    Drain only on critical and only a node that is not drained already (a drain set by
    someone else keeps its reason). Resume only a passing node whose drain reason starts
    with ``snrun:``: a node drained by an admin or another tool is never resumed. Unknown
    decides nothing.
    """
    ours = bool(reason and reason.startswith(DRAIN_PREFIX))
    if status == CRITICAL:
        return "drain" if drain and not drained else None
    if status in (OK, WARNING) and resume_ok and drained and ours:
        return "resume"
    return None


def drain_reason(results: Iterable[CheckResult], limit: int = 200) -> str:
    """``snrun: <check>: <message>; ...`` from the critical results, one line, bounded."""
    parts = [f"{r.name}: {r.message}" for r in results if r.status == CRITICAL]
    text = f"{DRAIN_PREFIX} " + ("; ".join(parts) or "health check failed")
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
