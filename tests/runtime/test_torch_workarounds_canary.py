"""Canaries of runtime/torch_workarounds/: each fails once torch no longer does what its
workaround is for. When one fails, take the workaround out (and this test with it), do not
loosen the test: docs/architecture.md, section Torch workarounds."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.runtime.test_torch_workaround_exception_log import LOGS_A_FAILED_WORKER

# Python's teardown ends with a garbage collection over every object still tracked; with
# torchrun's imports that was 4.5-12 s on a loaded 2-core node (py-spy: gc_collect_main) at
# ~170k objects (torch 2.13). Far fewer, and the teardown is no longer worth skipping.
MANY_OBJECTS = 100_000


def _python(code: str, tmp_path) -> str:
    env = dict(os.environ)
    env.pop("TORCH_LOGS", None)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_canary_torchrun_leaves_its_teardown_a_large_heap(tmp_path):
    """fast_exit.py: torchrun's imports leave the final collection ~170k objects to walk."""
    pytest.importorskip("torch")
    out = _python("import gc, torch.distributed.run; print(len(gc.get_objects()))", tmp_path)
    assert int(out) > MANY_OBJECTS, f"torch now leaves {out.strip()} objects: fast_exit.py can go"


def test_canary_torchs_log_formatter_imports_its_compiler(tmp_path):
    """exception_log.py: torch's own formatter, given torchrun's failed-worker record with its
    exception, imports torch._dynamo (and torch._inductor)."""
    pytest.importorskip("torch")
    out = _python(LOGS_A_FAILED_WORKER, tmp_path)  # run as a script: its main() runs
    assert out == "dynamo imported: True\n", f"{out!r}: exception_log.py can go"
