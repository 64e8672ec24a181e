"""torchrun as the agent's child: signals forwarded (TERM/INT/HUP to torchrun, USR1/USR2 to
the ranks), its stderr's tail kept, its ranks watched, the fail-fast stop carried out.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from slurm_supernode.runtime import failfast
from slurm_supernode.runtime.launcher_stop import LauncherStop
from slurm_supernode.runtime.proc_tree import descendants
from slurm_supernode.runtime.rank_sightings import RankSightings
from slurm_supernode.runtime.stderr_tail import StderrTail


def _ignore_usr_signals() -> None:
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    signal.signal(signal.SIGUSR2, signal.SIG_IGN)


class ChildExit(NamedTuple):
    """How torchrun (or the container around it) ended."""

    code: int  # its exit code (128 + N for signal N)
    tail: str  # the tail of its stderr (torchrun's failure report)
    stopped: str | None = None  # why the agent stopped it (fail fast), or None
    # torchrun's children (its ranks) -> when the agent last saw each alive (wall clock)
    last_seen: Mapping[int, float] = MappingProxyType({})
    # ranks the agent saw die of a signal, as torchrun's report has them (``RankSightings``)
    deaths: tuple[dict[str, Any], ...] = ()


# What torchrun prints once it ends its ranks on its own (torch's elastic/multiprocessing: it
# stops the other ranks of a node whose rank failed) and its failure report's first line
ENDING_ON_ITS_OWN = (b"Closing process ", b" closing signal ", b"ChildFailedError")


def run_child(
    argv: list[str],
    env: Mapping[str, str],
    *,
    shield_launcher: bool = False,
    cpu_mark: Path | None = None,
    launcher: Callable[[], list[int]] | None = None,
    stop: Callable[[], failfast.StopRequest | None] | None = None,
    exits: str | None = None,
) -> ChildExit:
    """Run torchrun as a child and forward signals: TERM/INT/HUP to torchrun (it stops its
    workers), USR1/USR2 to the training processes only (torchrun would die of them). Returns the
    exit code and the tail of its stderr. ``cpu_mark`` is touched while the ranks use CPU.

    ``shield_launcher`` (forked workers): slurmstepd delivers a step's signal to every process
    of the step, torchrun included; torchrun dies of SIGUSR2, and workers forked from it die
    with it (they are set to get SIGINT when their parent dies) before they checkpoint. So
    torchrun starts with USR1/USR2 ignored; its forked workers inherit that until the script
    installs its own handler (a script without one keeps running instead of dying).

    ``launcher``: where torchrun is no descendant of the child (in a container started by an
    srun step), the PIDs of torchrun; USR1/USR2 and the CPU watch go to what runs below it.

    ``stop``: this node's fail-fast stop request, looked at every 0.1 s; when it asks, torchrun
    is stopped (``stop_launcher``) and the result says why; not while its own rank failed
    (a torchrun that ends on its own, a rank seen dead, or gone without the clean-exit mark in
    ``exits``, the folder forked ranks mark)."""
    import subprocess

    proc = subprocess.Popen(
        argv,
        env=dict(env),
        stderr=subprocess.PIPE,
        preexec_fn=_ignore_usr_signals if shield_launcher else None,
    )
    assert proc.stderr is not None
    tail = StderrTail(proc.stderr.fileno())

    def to_launcher(signum: int, _frame: object) -> None:
        proc.send_signal(signum)

    def roots() -> list[int]:
        return launcher() if launcher is not None else [proc.pid]

    def below() -> list[int]:
        return [pid for root in roots() for pid in descendants(root)]

    def to_workers(signum: int, _frame: object) -> None:
        for pid in below():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, to_launcher)
    for sig in (signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, to_workers)
    watch = None
    if cpu_mark is not None:
        from slurm_supernode.forensics.hang import start_cpu_watch

        # torchrun too: with forked workers it imports torch before any worker exists
        watch = start_cpu_watch(lambda: [proc.pid, *roots(), *below()], cpu_mark)
    sightings = RankSightings(roots, exits)

    def ends_on_its_own() -> bool:
        sightings.look()  # now: the rank may have died since the last look
        failed = sightings.killed or sightings.vanished
        return bool(failed) or tail.holds(ENDING_ON_ITS_OWN)

    stopper = None if stop is None else LauncherStop(stop, roots, below, ends_on_its_own)
    while True:
        sightings.look()
        try:
            code = proc.wait(timeout=0.1)
            break
        except subprocess.TimeoutExpired:
            if stopper is not None:
                stopper.look()
    if watch is not None:
        watch.set()
    reason = stopper.reason if stopper is not None else None
    code = code if code >= 0 else 128 - code
    return ChildExit(code, tail.text(), reason, sightings.last_seen, sightings.deaths())
