"""Hang detection from progress the job already shows, and evidence before a stop.

Without a heartbeat, an attempt counts as making progress while any rank writes output (its log
files in ``logs/attempt<N>/`` grow) or its processes use CPU (each agent touches
``logs/attempt<N>/<node>/cpu`` while its ranks' CPU time advances). A rank stuck in a collective
does neither. The heartbeat (``SNRUN_HEARTBEAT_FILE``) stays the precise signal: once an
attempt wrote one, only it counts. Before the supervisor stops a hung (or timed-out) attempt it
runs ``snrun stacks`` on every node (an ``srun --overlap`` step): a py-spy dump per rank, and
the NCCL flight recorder where NCCL runs, into ``logs/attempt<N>/stacks/``.
"""

from __future__ import annotations

import math
import os
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from slurm_supernode.forensics.logs import attempt_dir

# Used when neither the site (an env profile) nor the user sets SNRUN_HANG_TIMEOUT: longer than
# torch's own collective timeouts (10 min NCCL, 30 min gloo), so a real hang ends the attempt
# even where those are raised, and a slow phase without output is not stopped too early.
DEFAULT_HANG_TIMEOUT = 1800.0
CPU_FILE = "cpu"
_CLK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def hang_timeout(environ_value: float | None, inputs_value: float) -> float:
    """The timeout of this job: SNRUN_HANG_TIMEOUT from the job's environment (site profile or
    --env; 0 turns detection off), else the one planned at submit, else the default."""
    if environ_value is not None:
        return environ_value
    return inputs_value or DEFAULT_HANG_TIMEOUT


def last_activity(job_dir: Path, attempt: int, since: float) -> float:
    """Newest modification time among the attempt's rank logs and CPU marks (``since`` if
    none is newer)."""
    newest = since
    root = attempt_dir(job_dir, attempt)
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "stacks"]
        for name in files:
            try:
                newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime)
            except OSError:
                continue
    return newest


def is_hung(
    now: float,
    started: float,
    timeout: float,
    startup: float,
    heartbeat: float | None,
    activity: float,
) -> bool:
    """Hang rule (pure). With a heartbeat of this attempt: none for ``timeout`` seconds. Before
    it: no heartbeat within ``startup`` when that grace is set (finite), else no output or CPU
    progress for ``timeout`` (a job may never write heartbeats)."""
    if timeout <= 0:
        return False
    if heartbeat is not None and heartbeat > started:
        return now - heartbeat > timeout
    if math.isfinite(startup):
        return now - started > startup
    return now - max(activity, started) > timeout


def cpu_ticks(pids: Sequence[int]) -> int:
    total = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        total += int(fields[11]) + int(fields[12])  # utime + stime
    return total


def watch_cpu(
    pids: Callable[[], list[int]],
    mark: Path,
    stop: threading.Event,
    interval: float = 5.0,
    share: float = 0.05,
) -> None:
    """Touch ``mark`` whenever the processes used more than ``share`` of a core during the last
    ``interval`` (a rank blocked in a collective or asleep uses next to none)."""
    last = cpu_ticks(pids())
    while not stop.wait(interval):
        now = cpu_ticks(pids())
        if now - last >= share * interval * _CLK:
            try:
                mark.parent.mkdir(parents=True, exist_ok=True)
                mark.touch()
            except OSError:
                pass
        last = now


def start_cpu_watch(pids: Callable[[], list[int]], mark: Path) -> threading.Event:
    """Run ``watch_cpu`` in a daemon thread; set the returned event to stop it."""
    stop = threading.Event()
    threading.Thread(target=watch_cpu, args=(pids, mark, stop), daemon=True).start()
    return stop


def dump_stacks(
    python: str, job_id: int, hosts: Sequence[str], job_dir: Path, attempt: int, timeout: float
) -> Path | None:
    """Stack dumps of every rank on every node into ``logs/attempt<N>/stacks/`` (one srun
    --overlap step); the folder, or None when the step could not run."""
    from slurm_supernode.errors import SlurmError
    from slurm_supernode.slurm.attach import attach_argv, run_attached

    out = attempt_dir(job_dir, attempt) / "stacks"
    out.mkdir(parents=True, exist_ok=True)
    helper = [python, "-m", "slurm_supernode", "stacks", f"--job-id={job_id}", f"--out={out}"]
    with open(out / "collect.log", "w") as log:
        try:
            run_attached(
                attach_argv(job_id, list(hosts), helper),
                timeout=timeout,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        except SlurmError as exc:
            log.write(f"{exc}\n")
            return None
    return out if any(p.name.startswith("rank") for p in out.iterdir()) else None
