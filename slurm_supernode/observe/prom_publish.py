"""One node's Prometheus series, kept up to date by that node's agent while the job runs:
its own samples, its ranks' steps and windows and the slow marks are summarised
(summary.py), rendered (prom_textfile.py) and written atomically into the site's
``paths.prometheus_textfile_dir``, and/or pushed to the site's ``observe.pushgateway``
(prom_push.py); removed at the end, so a finished job leaves no series.

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
from slurm_supernode.observe.prom_push import delete_node, push_node
from slurm_supernode.observe.prom_textfile import (
    remove_node_textfile,
    render_node_textfile,
    write_node_textfile,
)
from slurm_supernode.observe.summary import AttemptSummary, JobContext, summarize

TAIL_BYTES = 64 << 10  # of each record file: the newest records are all a textfile needs


def node_summary(
    job_dir: Path, ctx: JobContext, node: str, ranks: Collection[int], now: float | None = None
) -> AttemptSummary:
    """``node``'s figures of attempt ``ctx.attempt`` now (the newest records only)."""
    records = load_attempt(job_dir, ctx.attempt, nodes=(node,), ranks=ranks, tail_bytes=TAIL_BYTES)
    return summarize(records, ctx, time.time() if now is None else now)


def publish_node(
    directory: str,
    job_dir: Path,
    ctx: JobContext,
    node: str,
    ranks: Collection[int],
    now: float | None = None,
    summary: AttemptSummary | None = None,
) -> str | None:
    """Write ``node``'s textfile of attempt ``ctx.attempt``; None when written, else why not."""
    if summary is None:
        summary = node_summary(job_dir, ctx, node, ranks, now)
    try:
        write_node_textfile(directory, summary, node)
    except OSError as exc:
        return f"Prometheus textfile not written in {directory}: {exc.strerror or exc}"
    except SnrunError as exc:  # a lock held too long, a foreign file by our name
        return f"Prometheus textfile not written in {directory}: {exc}"
    return None


def push_summary(gateway: str, summary: AttemptSummary, node: str) -> str | None:
    """Push ``node``'s series to the gateway; None when pushed, else why not."""
    try:
        text = render_node_textfile(summary, node)
    except ValueError as exc:  # promfile's check: never pushed half-right
        return f"not pushed to the Pushgateway {gateway}: {exc}"
    return push_node(gateway, summary.job_id, node, text)


def unpush_node(gateway: str, job_id: int | None, node: str) -> str | None:
    """At the end of the job: its group deleted from the gateway; why not, if it was not."""
    return delete_node(gateway, job_id, node)


def unpublish_node(directory: str, job_id: int | None, node: str) -> None:
    """At the end of the job (or of the agent): its series go with it."""
    with contextlib.suppress(OSError):
        remove_node_textfile(directory, job_id, node)
