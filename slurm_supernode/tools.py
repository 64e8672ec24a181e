"""Run an external tool (nvidia-smi, npu-smi, hccn_tool, dmesg) with a timeout.

Why one helper: the health check, the doctor's probe and the Ascend reader all call vendor tools
that may be missing or hang on a sick node, and each must get a result, never an exception:
a timeout is exit code 124 and a tool that cannot start 127, like the shell's.
"""

from __future__ import annotations

import subprocess

TIMED_OUT = 124
CANNOT_RUN = 127


def run_tool(argv: list[str], timeout: float) -> tuple[int, str]:
    """Run a tool; (exit code, stdout + stderr). Never raises: failures are codes."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return TIMED_OUT, f"{argv[0]} timed out after {timeout:g} s"
    except OSError as exc:
        return CANNOT_RUN, f"{argv[0]}: {exc.strerror or exc}"
    return proc.returncode, (proc.stdout or "") + (proc.stderr or "")
