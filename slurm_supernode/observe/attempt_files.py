"""Reading one attempt's observe folder into `AttemptRecords` (the file side of summary.py).

The file names are records.py's; which node or rank a file is of comes from its name, what it
holds from `records.read` (torn or foreign lines skipped).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path

from slurm_supernode.observe import records
from slurm_supernode.observe.records import CommShare, Record, SlowNodeMark, StepRecord
from slurm_supernode.observe.summary import AttemptRecords

_RANK_FILE = re.compile(r"rank-(\d+)\.(steps|comm)\.jsonl")
_SAMPLES_SUFFIX = records.samples_path(Path(), 0, "").name  # ".samples.jsonl"


def load_attempt(
    job_dir: Path,
    attempt: int,
    *,
    nodes: Collection[str] | None = None,
    ranks: Collection[int] | None = None,
    tail_bytes: int | None = None,
) -> AttemptRecords:
    """Every record of one attempt (an attempt without a folder has none); ``nodes`` and
    ``ranks``: only these nodes' samples and these ranks' steps and windows (one node's agent
    reads its own, not the whole job's); ``tail_bytes``: only each file's last so many bytes
    (the newest records: enough for the summary of a job that has run for days)."""

    def read(path: Path) -> list[Record]:
        if tail_bytes is None:
            return list(records.read(path))
        return list(records.read_tail(path, tail_bytes))

    folder = records.attempt_dir(job_dir, attempt)
    try:
        names = sorted(p.name for p in folder.iterdir())
    except OSError:
        return AttemptRecords()
    samples: dict[str, list[Record]] = {}
    steps: dict[int, list[StepRecord]] = {}
    comm: dict[int, list[CommShare]] = {}
    for name in names:
        if name.endswith(_SAMPLES_SUFFIX) and len(name) > len(_SAMPLES_SUFFIX):
            node = name[: -len(_SAMPLES_SUFFIX)]
            if nodes is not None and node not in nodes:
                continue
            samples[node] = read(records.samples_path(job_dir, attempt, node))
        elif m := _RANK_FILE.fullmatch(name):
            rank = int(m.group(1))
            if ranks is not None and rank not in ranks:
                continue
            if m.group(2) == "steps":
                path = records.steps_path(job_dir, attempt, rank)
                steps[rank] = [r for r in read(path) if isinstance(r, StepRecord)]
            else:
                path = records.comm_path(job_dir, attempt, rank)
                comm[rank] = [r for r in read(path) if isinstance(r, CommShare)]
    slow = [
        r for r in records.read(records.slow_path(job_dir, attempt)) if isinstance(r, SlowNodeMark)
    ]
    return AttemptRecords(samples=samples, steps=steps, slow=slow, comm=comm)
