"""Cause ``imex``: which trays to blame for a missing IMEX channel, domain or clique, and the
NCCL lines that say a rank lacked the channel. Pure.

NCCL reaches another tray over NVLink only through the job's IMEX channel; without it the
first cross-tray NCCL call fails with ``Cuda failure 800 'operation not permitted'`` (the
fabric memory cannot be imported) or NCCL says ``MNNVL is available but not working`` (the
device is hidden, e.g. by a container's device rules). Both name the tray, not the program.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from slurm_supernode.runtime.imex_preflight import NO_CHANNEL

_SIGNATURES = (
    re.compile(r"Cuda failure 800 'operation not permitted'"),
    re.compile(r"MNNVL is available but not working", re.I),
)


def nccl_imex_line(text: str) -> str | None:
    """The first line of ``text`` (a rank's log, an exception message) in which NCCL says the
    IMEX channel is missing, stripped; None when there is none."""
    for line in text.splitlines():
        if any(sig.search(line) for sig in _SIGNATURES):
            return line.strip()[:300]
    return None


def nccl_imex_in_logs(tail: str, log_dir: Path, keep: int = 256 * 1024) -> str | None:
    """The NCCL line of a failed node: in torchrun's output tail (the ranks' output, teed), else
    in the ranks' log files under ``log_dir`` (their last ``keep`` bytes each)."""
    line = nccl_imex_line(tail)
    if line is not None:
        return line
    for path in sorted(log_dir.rglob("*.log")) if log_dir.is_dir() else ():
        try:
            with path.open("rb") as fh:
                fh.seek(max(0, path.stat().st_size - keep))
                line = nccl_imex_line(fh.read().decode("utf-8", "replace"))
        except OSError:
            continue
        if line is not None:
            return line
    return None


def imex_blame(failed: Mapping[str, str], hosts: Sequence[str]) -> tuple[tuple[str, ...], str]:
    """(trays to exclude, detail). Every tray of the job without a channel is no tray's
    fault: Slurm gave the job none (24.11 starts a job without one when its channels are used
    up: `switch_p_job_start: no channel available` in slurmctld's log), so nothing is excluded
    and the requeued job waits for a channel."""
    nodes = tuple(h for h in hosts if h in failed) or tuple(failed)
    first = failed[nodes[0]]
    if set(failed) >= set(hosts) and all(w.startswith(NO_CHANNEL) for w in failed.values()):
        return (), f"no tray of the job has an IMEX channel (Slurm gave none): {first}"
    return nodes, f"IMEX on {','.join(nodes)}: {first}"
