"""The slow-node marks of an attempt (``observe/<attempt>/slow.jsonl``) in ``snrun status``:
one line per node with its evidence, also while the attempt runs."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from slurm_supernode.observe.records import SlowNodeMark, read, slow_path


def with_slow_marks(job_dir: Path, attempt: dict[str, Any]) -> dict[str, Any]:
    """``attempt`` (a status row) with its marks under ``slow`` (none: no key)."""
    number = attempt.get("attempt")
    if not isinstance(number, int):
        return attempt
    marks = [asdict(m) for m in read(slow_path(job_dir, number)) if isinstance(m, SlowNodeMark)]
    return attempt | {"slow": marks} if marks else attempt


def slow_lines(attempt: dict[str, Any]) -> list[str]:
    out = []
    for mark in attempt.get("slow") or []:
        where = f" ({mark['supernode']})" if mark.get("supernode") else ""
        out.append(f"    slow node {mark['node']}{where}: {mark['evidence']}")
    return out
