"""The agent's Prometheus textfile of its node (docs/observe.md, "Prometheus"): where the site
names ``paths.prometheus_textfile_dir``, a daemon thread republishes the node's figures every
sampling period (observe/prom_publish.py) and removes the file when the agent stops it. A
failure is said once on stderr; the job goes on."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Collection
from pathlib import Path

from slurm_supernode.fsutil import expand_path
from slurm_supernode.observe.prom_publish import publish_node, unpublish_node
from slurm_supernode.observe.summary import JobContext


def _user() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def start_publishing(
    directory: str,
    job_dir: Path,
    ctx: JobContext,
    node: str,
    ranks: Collection[int],
    period: float,
) -> Callable[[], None]:
    """Publish now and every ``period`` s; the returned call stops and removes the file.
    No directory or no period: nothing runs (the call does nothing)."""
    if not directory or period <= 0:
        return lambda: None
    where = str(expand_path(directory))
    stop = threading.Event()

    def loop() -> None:
        said = False
        while not stop.is_set():
            why = publish_node(where, job_dir, ctx, node, ranks)
            if why and not said:
                print(f"snrun agent on {node}: {why}", file=sys.stderr, flush=True)
                said = True
            stop.wait(period)

    thread = threading.Thread(target=loop, name="snrun-prom-textfile", daemon=True)
    thread.start()

    def finish() -> None:
        stop.set()
        thread.join(timeout=max(period, 5.0))
        unpublish_node(where, ctx.job_id, node)

    return finish


def period(site_period: float, environ_value: str | None) -> float:
    """The sampler's period (``$SNRUN_SAMPLE_PERIOD`` over the site's), read quietly: the
    sampler already says when the variable is bad."""
    try:
        value = float(environ_value or "")
    except ValueError:
        return site_period
    return value if 0 <= value < float("inf") else site_period


def node_context(job_id: int, attempt: int, node: str, supernode: str) -> JobContext:
    """The agent's view of the job for its node's textfile."""
    return JobContext(
        job_id=job_id, user=_user(), attempt=attempt, nodes=(node,),
        supernode_of={node: supernode}, state="RUNNING",
    )  # fmt: skip
