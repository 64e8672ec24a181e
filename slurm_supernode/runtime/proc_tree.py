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


EXITING = -1  # ``zombie_signal``: the process has begun to die and is not a zombie yet
PF_EXITING = 0x4  # the kernel's task flag, set as a task starts to exit


def zombie_signal(pid: int) -> int | None:
    """None while ``pid`` lives; EXITING from the moment it begins to die; once it is a zombie
    not yet reaped by its parent, the signal that killed it, 0 for an exit."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return stat_exit(fh.read())
    except OSError:
        return None


def stat_exit(stat: str) -> int | None:
    """``zombie_signal`` of one /proc/PID/stat line. A process killed by a signal closes its
    files (its sockets: peers see it gone and raise) while the kernel tears it down, before it
    is a zombie; a large process takes milliseconds there. Its task flags (field 9) say
    PF_EXITING from the start of that teardown, so a process seen without it was alive before
    any peer could have seen it gone. The exit status is the last field."""
    try:
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z":
            return int(fields[-1]) & 0x7F
        return EXITING if int(fields[6]) & PF_EXITING else None
    except (IndexError, ValueError):
        return None


def is_worker(pid: int) -> bool:
    """A process below torchrun that is a rank (not multiprocessing's resource tracker, which
    lives as long as torchrun in spawn mode)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return b"resource_tracker" not in fh.read()
    except OSError:
        return False
