"""The agent's Prometheus series of its node (docs/observe.md, "Prometheus"): where the site
names ``paths.prometheus_textfile_dir`` and/or ``observe.pushgateway``, a daemon thread
republishes the node's figures every sampling period (observe/prom_publish.py: the textfile
rewritten, the gateway's group replaced) and removes them when the agent stops it. A failure is
said once on stderr (and once more when it works again); the job goes on."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Collection
from pathlib import Path

from slurm_supernode.fsutil import expand_path
from slurm_supernode.observe.prom_publish import (
    node_summary,
    publish_node,
    push_summary,
    unpublish_node,
    unpush_node,
)
from slurm_supernode.observe.summary import JobContext


def _user() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


FINISH_S = 30.0  # the most the agent's end waits for the publisher's last write and removal


def start_publishing(
    directory: str,
    job_dir: Path,
    ctx: JobContext,
    node: str,
    ranks: Collection[int],
    period: float,
    gateway: str = "",
) -> Callable[[], None]:
    """Publish now and every ``period`` s; the returned call stops and removes the series.
    No directory and no gateway, or no period: nothing runs (the call does nothing)."""
    if not (directory or gateway) or period <= 0:
        return lambda: None
    where = str(expand_path(directory)) if directory else ""
    stop = threading.Event()
    say = _Sayer(node)

    def loop() -> None:
        while not stop.is_set():
            summary = node_summary(job_dir, ctx, node, ranks)
            if where:
                say("textfile", publish_node(where, job_dir, ctx, node, ranks, summary=summary))
            if gateway:
                why = push_summary(gateway, summary, node)
                say("push", why and f"{why}; its series are missing there, the job goes on")
            stop.wait(period)
        # removed by this thread, after its last write: a write still under way when the
        # agent stops it can never come after the removal (and leave a finished job's series)
        if where:
            unpublish_node(where, ctx.job_id, node)
        if gateway:
            say("delete", unpush_node(gateway, ctx.job_id, node))

    thread = threading.Thread(target=loop, name="snrun-prom-publish", daemon=True)
    thread.start()

    def finish() -> None:
        stop.set()
        # a summary and at most a push and a delete, each bounded by prom_push.TIMEOUT_S
        thread.join(timeout=max(period, FINISH_S))

    return finish


class _Sayer:
    """A failure said once per kind while it lasts, and its end said once."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.failing: set[str] = set()

    def __call__(self, kind: str, why: str | None) -> None:
        if why and kind not in self.failing:
            self.failing.add(kind)
            print(f"snrun agent on {self.node}: {why}", file=sys.stderr, flush=True)
        elif not why and kind in self.failing:
            self.failing.discard(kind)
            print(f"snrun agent on {self.node}: {kind}: working again", file=sys.stderr, flush=True)


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
