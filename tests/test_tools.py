"""tools.run_tool: a result for every tool, never an exception."""

from __future__ import annotations

import sys

from slurm_supernode.tools import CANNOT_RUN, TIMED_OUT, run_tool


def test_output_and_exit_code() -> None:
    code, out = run_tool([sys.executable, "-c", "import sys; print('a'); sys.exit(3)"], 30)
    assert (code, out) == (3, "a\n")


def test_stderr_follows_stdout() -> None:
    argv = [sys.executable, "-c", "import sys; print('o'); print('e', file=sys.stderr)"]
    assert run_tool(argv, 30) == (0, "o\ne\n")


def test_missing_tool_is_127() -> None:
    code, out = run_tool(["/nonexistent/snrun-no-such-tool"], 5)
    assert code == CANNOT_RUN
    assert out.startswith("/nonexistent/snrun-no-such-tool: ")


def test_hanging_tool_is_124() -> None:
    code, out = run_tool([sys.executable, "-c", "import time; time.sleep(60)"], 0.5)
    assert (code, out) == (TIMED_OUT, f"{sys.executable} timed out after 0.5 s")
