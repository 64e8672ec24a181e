"""Training progress with no change to the user's code: torch's process-wide optimizer-step
hook (``torch.optim.optimizer.register_optimizer_step_post_hook``), installed in every rank
(before the script runs in a forked worker, ``runtime/rank_entry``; once the script's own
``import torch`` finished in a spawned one, ``runtime/spawn_entry``), records each step
(``observe/step_recorder``) and opens the rank's profiler window once after warm-up
(``runtime/comm_window``).

torch is never imported here: the hook is installed only where torch is already loaded (a
forked worker inherits torchrun's; a spawned worker's script imported it). A script that never
steps an optimizer runs unchanged and writes no step records (its progress is unknown, and the
views say so). Where a script steps several optimizers, the steps of the first one to step are
counted (one per iteration).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from slurm_supernode.observe import step_recorder

_handles: list[Any] = []  # torch's handles of the hooks this process installed


def install(environ: Mapping[str, str] | None = None) -> bool:
    """Install the hook for this rank; False where there is nothing to record to or no torch
    loaded (then only ``progress.report`` records steps)."""
    environ = os.environ if environ is None else environ
    recorder = step_recorder.install(environ)
    if recorder is None or "torch" not in sys.modules:
        return False
    try:
        from torch.optim.optimizer import register_optimizer_step_post_hook
    except ImportError:  # a torch without the global hook (< 2.0)
        return False
    from slurm_supernode.runtime.comm_window import window_from_environ

    window = window_from_environ(environ, recorder)
    counted: list[int] = []  # id() of the optimizer whose steps count

    def after_step(optimizer: Any, _args: Any, _kwargs: Any) -> None:
        if not counted:
            counted.append(id(optimizer))
        elif counted[0] != id(optimizer):
            return
        record = recorder.on_step()
        if window is not None:
            window.after_step(record.step)

    _handles.append(register_optimizer_step_post_hook(after_step))
    recorder.hooked = True
    return True


def uninstall() -> None:
    """Take the hook out again (torch's handle): steps are no longer recorded. For a benchmark
    that compares steps with and without it in one process (perf/bench_observe.py)."""
    while _handles:
        _handles.pop().remove()
    recorder = step_recorder.current()
    if recorder is not None:
        recorder.hooked = False


def finish() -> None:
    """The rank's end: write what is kept (a forked worker exits without atexit handlers)."""
    recorder = step_recorder.current()
    if recorder is not None:
        recorder.flush()
