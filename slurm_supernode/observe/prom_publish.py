"""One node's Prometheus textfile, kept up to date by that node's agent while the job runs:
its own samples, its ranks' steps and windows and the slow marks are summarised
(summary.py), rendered (prom_textfile.py) and written atomically into the site's
``paths.prometheus_textfile_dir``; removed at the end, so a finished job leaves no series.

The agent's sampler calls ``publish_node`` once per sampling period, after its own write. A
failure (a full disk, a directory that is not there) is returned as a reason, never raised:
the job goes on without the textfile.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection
from pathlib import Path

from slurm_supernode.errors import SnrunError
from slurm_supernode.observe.attempt_files import load_attempt
from slurm_supernode.observe.prom_textfile import remove_node_textfile, write_node_textfile
from slurm_supernode.observe.summary import JobContext, summarize

TAIL_BYTES = 64 << 10  # of each record file: the newest records are all a textfile needs


def publish_node(
    directory: str,
    job_dir: Path,
    ctx: JobContext,
    node: str,
    ranks: Collection[int],
    now: float | None = None,
) -> str | None:
    """Write ``node``'s textfile of attempt ``ctx.attempt``; None when written, else why not."""
    records = load_attempt(job_dir, ctx.attempt, nodes=(node,), ranks=ranks, tail_bytes=TAIL_BYTES)
    summary = summarize(records, ctx, time.time() if now is None else now)
    try:
        write_node_textfile(directory, summary, node)
    except OSError as exc:
        return f"Prometheus textfile not written in {directory}: {exc.strerror or exc}"
    except SnrunError as exc:  # a lock held too long, a foreign file by our name
        return f"Prometheus textfile not written in {directory}: {exc}"
    return None


def unpublish_node(directory: str, job_id: int | None, node: str) -> None:
    """At the end of the job (or of the agent): its series go with it."""
    with contextlib.suppress(OSError):
        remove_node_textfile(directory, job_id, node)
