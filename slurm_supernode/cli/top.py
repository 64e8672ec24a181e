"""`snrun top [JOB]`: a live view of a running job in the terminal, redrawn every few seconds
(per node: devices, step time, communication share, slow marks). q or Ctrl-C leaves it;
``--once`` prints one frame (for scripts and tests)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from slurm_supernode.cli.options import add_jobs_dir_arguments, int_range

_ENTER, _LEAVE, _HOME = "\x1b[?1049h\x1b[?25l", "\x1b[?25h\x1b[?1049l", "\x1b[H\x1b[J"


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0.5:
        raise argparse.ArgumentTypeError(f"must be at least 0.5 seconds, got {text}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "A live view of an snrun job: per node its devices (utilization, memory, temperature, "
        "power), step time, communication share against the plan and slow-node marks, redrawn "
        "every few seconds. Without JOB: your newest running job. q or Ctrl-C quits."
    )
    p.add_argument(
        "job", nargs="?", metavar="JOB", help="job id or job directory (default: newest running)"
    )
    p.add_argument("--once", action="store_true", help="print one frame and exit (no colour)")
    p.add_argument(
        "-d",
        "--interval",
        type=_positive_seconds,
        default=5.0,
        metavar="SECONDS",
        help="seconds between frames (default 5)",
    )
    p.add_argument(
        "--window",
        type=int_range(1),
        default=20,
        metavar="STEPS",
        help="step time: the median of each rank's last STEPS steps (default 20)",
    )
    add_jobs_dir_arguments(p)


def _job_dir(ns: argparse.Namespace) -> Path:
    from slurm_supernode.api.metrics import job_dir_of, newest_running_job
    from slurm_supernode.errors import InputError

    if ns.job is not None:
        return job_dir_of(ns.job, jobs_dir=ns.jobs_dir, site=ns.site)
    found = newest_running_job(jobs_dir=ns.jobs_dir, site=ns.site)
    if found is None:
        raise InputError(
            "no running snrun job of yours", where="JOB", hint="snrun status lists your jobs"
        )
    return found


def _frame(job_dir: Path, ns: argparse.Namespace, color: bool) -> list[str]:
    from slurm_supernode.api.metrics import attempt_metrics
    from slurm_supernode.observe.top_frame import frame

    summary, _ = attempt_metrics(job_dir, None, ns.window)  # the newest attempt: follows requeues
    import shutil

    # the terminal's size; a terminal that says 0 (a fresh pty), or none: COLUMNS/LINES, 132x50
    cols, rows = shutil.get_terminal_size((132, 50)) if color else (132, 50)
    lines = frame(summary, width=cols, color=color)
    return lines[: max(rows - 1, 1)] if color else lines


def run(ns: argparse.Namespace) -> int:
    job_dir = _job_dir(ns)
    if ns.once or not sys.stdout.isatty():
        print("\n".join(_frame(job_dir, ns, color=False)))
        return 0
    return _live(job_dir, ns)


def _live(job_dir: Path, ns: argparse.Namespace) -> int:
    """Redraw until q (stdin a terminal) or Ctrl-C; the terminal is restored either way."""
    import select
    import termios
    import tty

    fd = sys.stdin.fileno()
    keys = os.isatty(fd)
    saved = termios.tcgetattr(fd) if keys else None
    out = sys.stdout
    try:
        if keys:
            tty.setcbreak(fd)
        out.write(_ENTER)
        while True:
            out.write(_HOME + "\n".join(_frame(job_dir, ns, color=True)) + "\n")
            out.write(f"q quits; every {ns.interval:g} s")
            out.flush()
            ready, _, _ = select.select([fd] if keys else [], [], [], ns.interval)
            if ready and os.read(fd, 1) in (b"q", b"Q"):
                return 0
    except KeyboardInterrupt:
        return 0
    finally:
        out.write(_LEAVE)
        out.flush()
        if saved is not None:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)
