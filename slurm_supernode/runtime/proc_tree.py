"""The processes below torchrun, read from /proc: descendants, children, zombies, ranks, and
torchrun itself where it is no child of the agent (in a container).
"""

from __future__ import annotations

import os


def torchrun_pids(log_dir: str) -> list[int]:
    """torchrun's process(es) of this node and attempt, found by its ``--log-dir`` (unique per
    node and attempt): in a container it is no child of the agent, but without a PID namespace
    its host PID is visible here."""
    marker = f"--log-dir={log_dir}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                args = fh.read().split(b"\0")
        except OSError:
            continue
        if marker in args and b"torch.distributed.run" in args:
            found.append(int(entry))
    return found


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc), children first."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def children(pid: int) -> list[int]:
    """``pid``'s child processes, from /proc/PID/task/*/children (no scan of /proc)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                out += [int(c) for c in fh.read().split()]
        except (OSError, ValueError):
            continue
    return out


def zombie_signal(pid: int) -> int | None:
    """None while ``pid`` lives; once it is a zombie not yet reaped by its parent, the signal
    that killed it, 0 for an exit (the exit status is the last field of /proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            return None
        status = int(fields[-1])
    except (OSError, IndexError, ValueError):
        return None
    return status & 0x7F


def is_worker(pid: int) -> bool:
    """A process below torchrun that is a rank (not multiprocessing's resource tracker, which
    lives as long as torchrun in spawn mode)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return b"resource_tracker" not in fh.read()
    except OSError:
        return False
