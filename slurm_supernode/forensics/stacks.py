"""Stack dumps of a job's ranks on this node (py-spy), and torch's NCCL flight recorder.

Runs on a node of the job (an ``srun --overlap`` step: ``snrun stacks``). The ranks are found
in /proc by their environment: torchrun's workers carry ``TORCHELASTIC_RESTART_COUNT`` and
``RANK``, and the job's ``SLURM_JOB_ID`` and ``SLURMD_NODENAME`` (several Slurm nodes may share
one host). py-spy attaches read-only (ptrace: same user, or root).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from slurm_supernode.errors import JobError
from slurm_supernode.jobenv import JobEnvironment

PY_SPY_HINT = "py-spy is not installed on this node (pip install 'slurm-supernode[torch]')"


@dataclass(frozen=True)
class RankProcess:
    pid: int
    rank: int
    local_rank: int
    env: Mapping[str, str]


def _environ(pid: int) -> dict[str, str] | None:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode(errors="replace")] = value.decode(errors="replace")
    return out


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def _flag(argv: list[str], name: str) -> int | None:
    for arg in argv:
        if arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
            return int(value) if value.isdigit() else None
    return None


def rank_processes(job_id: str, node: str | None) -> list[RankProcess]:
    """The job's rank processes on ``node`` (None: any), sorted by rank: the children of each
    torchrun (``python -m torch.distributed.run``) of the job. A rank's own children (data
    loader workers) are left out. The rank comes from the worker's environment (spawned
    workers) or from torchrun's ``--node-rank`` and the child's order (forked workers, whose
    /proc environment is torchrun's)."""
    children: dict[int, list[int]] = {}
    launchers = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        children.setdefault(_parent(pid), []).append(pid)
        argv = _cmdline(pid)
        if "torch.distributed.run" not in argv[:4]:
            continue
        env = _environ(pid)
        if not env:
            continue
        try:
            seen = JobEnvironment.from_environ(env)  # another process's environment
        except JobError:
            continue
        if str(seen.job_id) != job_id or (node and seen.nodename != node):
            continue
        launchers.append((pid, argv, env))
    found = []
    for pid, argv, env in launchers:
        node_rank = _flag(argv, "--node-rank") or 0
        nproc = _flag(argv, "--nproc-per-node") or 1
        for local, child in enumerate(sorted(children.get(pid, []))):
            cenv = _environ(child) or env
            local_rank = int(cenv["LOCAL_RANK"]) if cenv.get("LOCAL_RANK", "").isdigit() else local
            rank = (
                int(cenv["RANK"])
                if cenv.get("RANK", "").isdigit()
                else node_rank * nproc + local_rank
            )
            found.append(RankProcess(child, rank, local_rank, {**env, **cenv}))
    return sorted(found, key=lambda p: (p.rank, p.pid))


def py_spy_dump(pid: int, timeout: float = 30.0) -> str:
    """py-spy's dump of one process (every thread, the line each waits on)."""
    exe = shutil.which("py-spy")
    if not exe:
        return PY_SPY_HINT + "\n"
    try:
        proc = subprocess.run(
            [exe, "dump", "--pid", str(pid)], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return f"py-spy dump --pid {pid} did not finish within {timeout:g} s\n"
    return proc.stdout + (proc.stderr if proc.returncode else "")


def trigger_flight_recorder(procs: list[RankProcess], wait: float = 10.0) -> list[str]:
    """Ask every NCCL rank for its flight recorder dump (torch's pipe: a write to
    ``$TORCH_NCCL_DEBUG_INFO_PIPE_FILE<rank>.pipe`` makes the rank dump to
    ``$TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank>``); the dump files that appeared."""
    wanted = []
    for p in procs:
        pipe = p.env.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE")
        dump = p.env.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
        if not pipe or not dump:
            continue
        with contextlib.suppress(OSError):
            fd = os.open(f"{pipe}{p.rank}.pipe", os.O_WRONLY | os.O_NONBLOCK)
            try:
                os.write(fd, b"1\n")
            finally:
                os.close(fd)
            wanted.append(f"{dump}{p.rank}")
    deadline = time.monotonic() + wait
    while wanted and time.monotonic() < deadline:
        if all(os.path.exists(w) for w in wanted):
            break
        time.sleep(0.5)
    return [w for w in wanted if os.path.exists(w)]


def collect(
    job_id: str, node: str | None, ranks: set[int] | None, out_dir: Path | None
) -> tuple[int, str]:
    """Dump the ranks of this node: text for the terminal, or one ``rank<R>.txt`` per rank in
    ``out_dir``. Returns (number of ranks found, text)."""
    procs = [p for p in rank_processes(job_id, node) if ranks is None or p.rank in ranks]
    parts = []
    nccl = trigger_flight_recorder(procs) if procs else []
    for p in procs:
        head = f"== rank {p.rank} (local rank {p.local_rank}, node {node or '?'}, pid {p.pid}) =="
        body = py_spy_dump(p.pid)
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            (out_dir / f"rank{p.rank}.txt").write_text(f"{head}\n{body}")
        parts.append(f"{head}\n{body}")
    for path in nccl:
        parts.append(f"== NCCL flight recorder dump: {path} ==\n")
    return len(procs), "".join(parts)


_LABEL = re.compile(r"^\s*(\d+): ?(.*)$")
_RANK_HEAD = re.compile(r"^== rank (\d+) ")


def ranks_in_order(labelled: str) -> str:
    """The stack dumps of several nodes (``srun --label`` output: ``<task>: <line>``, the
    nodes' lines interleaved as they arrived) as one text, rank by rank. Lines before a
    rank's header and the flight recorder notes come last, in task order."""
    by_task: dict[int, list[str]] = {}
    for line in labelled.splitlines():
        m = _LABEL.match(line)
        task, text = (int(m[1]), m[2]) if m else (-1, line)
        by_task.setdefault(task, []).append(text)
    sections: list[tuple[int, list[str]]] = []
    rest: list[str] = []
    for task in sorted(by_task):
        current: list[str] | None = None
        for text in by_task[task]:
            head = _RANK_HEAD.match(text)
            if head:
                current = [text]
                sections.append((int(head[1]), current))
            elif current is not None and not text.startswith("== "):
                current.append(text)
            else:
                current = None
                rest.append(text)
    ordered = [line for _, lines in sorted(sections, key=lambda s: s[0]) for line in lines]
    return "".join(f"{line}\n" for line in [*ordered, *rest])
