"""torchrun's failure log: the traceback formatted without importing torch's compiler."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_supernode.runtime.agent_plan import FAST_EXIT
from slurm_supernode.runtime.torch_workarounds import exception_log
from slurm_supernode.runtime.torch_workarounds.exception_log import PreformattedException, install


class TorchLogsFormatter(logging.Formatter):
    """Stands in for torch's formatter (found by its class name): says whether it saw the
    exception object."""

    def format(self, record: logging.LogRecord) -> str:
        return f"saw exc_info={record.exc_info is not None}: " + super().format(record)


def _record(name: str) -> logging.LogRecord:
    try:
        raise RuntimeError("worker 1 failed")
    except RuntimeError:
        return logging.getLogger(name).makeRecord(
            name, logging.ERROR, __file__, 1, "failed", (), sys.exc_info()
        )


def test_torchs_formatter_gets_the_traceback_as_text_and_the_record_is_given_back():
    record = _record("snrun.test.plain")
    exc_info = record.exc_info
    text = PreformattedException(TorchLogsFormatter()).format(record)
    assert text.startswith("saw exc_info=False: failed\nTraceback (most recent call last):")
    assert text.endswith("RuntimeError: worker 1 failed")
    # the lines logging's own formatter prints from the exception object
    assert text == "saw exc_info=False: " + logging.Formatter().format(_record("snrun.test.x"))
    assert record.exc_info is exc_info  # other handlers still see the exception
    assert record.exc_text and record.exc_text in text


def test_torchs_artifact_loggers_are_left_to_torch():
    logging.getLogger("snrun.test.graph_breaks").artifact_name = "graph_breaks"  # type: ignore[attr-defined]
    record = _record("snrun.test.graph_breaks")
    text = PreformattedException(TorchLogsFormatter()).format(record)
    assert text.startswith("saw exc_info=True: ")


def test_install_wraps_torchs_handlers_once_and_no_others():
    torchs, other = logging.StreamHandler(), logging.StreamHandler()
    torchs.setFormatter(TorchLogsFormatter())
    plain = logging.Formatter()
    other.setFormatter(plain)
    logger = logging.getLogger("snrun.test.install")
    logger.addHandler(torchs)
    logger.addHandler(other)
    try:
        install()
        count = install()
        assert count >= 1 and torchs in exception_log.torch_handlers()
        wrapped = torchs.formatter
        assert isinstance(wrapped, PreformattedException)
        assert type(wrapped.torchs) is TorchLogsFormatter  # wrapped once, not twice
        assert other.formatter is plain
    finally:
        logger.removeHandler(torchs)
        logger.removeHandler(other)


LOGS_A_FAILED_WORKER = """
import logging, sys
import torch.distributed.run  # torch's handlers, as torchrun has them

def main():
    log = logging.getLogger("torch.distributed.elastic.multiprocessing.api")
    try:
        raise RuntimeError("worker 1 failed")
    except RuntimeError:
        log.exception("failed (exitcode: 1) local_rank: 1")
    print("dynamo imported:", "torch._dynamo" in sys.modules, flush=True)
    return 0

if __name__ == "__main__":
    main()
"""


def _without_time_and_pid(text: str) -> list[str]:
    return [re.sub(r"^E\d{4} [\d:.]+ \d+ ", "E ", line) for line in text.splitlines()]


def test_torchrun_under_fast_exit_logs_the_same_lines_without_importing_dynamo(tmp_path: Path):
    """The agent's torchrun entry (fast_exit.py) against plain Python: the failure record's
    lines are the same, and torch's compiler is imported only without the filter."""
    pytest.importorskip("torch")
    (tmp_path / "logs_failure.py").write_text(LOGS_A_FAILED_WORKER)
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("TORCH_LOGS", None)
    ours = subprocess.run(
        [sys.executable, FAST_EXIT, "-m", "logs_failure"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
    )  # fmt: skip
    plain = subprocess.run(
        [sys.executable, str(tmp_path / "logs_failure.py")],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
    )  # fmt: skip
    assert ours.returncode == 0 and plain.returncode == 0, ours.stderr + plain.stderr
    assert ours.stdout == "dynamo imported: False\n", ours.stdout
    assert plain.stdout == "dynamo imported: True\n", plain.stdout  # torch's own formatter
    lines = _without_time_and_pid(ours.stderr)
    assert lines == _without_time_and_pid(plain.stderr)
    assert lines[0].startswith("E ") and "failed (exitcode: 1) local_rank: 1" in lines[0]
    assert lines[-1].endswith("RuntimeError: worker 1 failed")
    assert all(line.startswith("E ") for line in lines)  # torch's prefix on every line
