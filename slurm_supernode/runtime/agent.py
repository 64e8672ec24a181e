"""The per-node agent: one per node inside the job, started by the supervisor's srun step.

It recomputes the rank map locally from the site and the allocation (same inputs, same map
on every node), checks the allocation is whole super nodes, sets the device order and the
collective library's variables, writes the HCCL rank table on Ascend sites, and execs
torchrun with this node's rank as its child (so the node's exit code reaches the ledger).
No torch import here: torchrun is a separate program.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from slurm_supernode.errors import InputError, JobError, SnrunError
from slurm_supernode.forensics.env import forensics_env, installed_torch
from slurm_supernode.fsutil import write_json_atomic
from slurm_supernode.jobenv import JobEnvironment
from slurm_supernode.launch.container import ContainerSpec
from slurm_supernode.launch.container_render import ContainerLaunch
from slurm_supernode.launch.inputs import JobInputs, load_inputs, rank_map_for_job
from slurm_supernode.launch.request import whole_supernode_problems
from slurm_supernode.placement.model import NodePlacement, RankMap
from slurm_supernode.runtime import failfast
from slurm_supernode.runtime.rank_entry import EXITS_ENV
from slurm_supernode.site.model import Site

RANK_ENTRY = str(Path(__file__).with_name("rank_entry.py"))
# torchrun's entry: its main(), then an exit without Python's teardown (a torch workaround)
FAST_EXIT = str(Path(__file__).with_name("torch_workarounds") / "fast_exit.py")
# Variables worth keeping in the job directory to explain a run afterwards.
_KEEP_PREFIXES = ("NCCL_", "HCCL_", "TORCH_", "SNRUN_", "MASTER_", "CUDA_", "ASCEND_", "RANK_")


def master_port(job_id: int, attempt: int) -> int:
    """A port per job and attempt, so a restart never meets the last attempt's TIME_WAIT."""
    return 15000 + (job_id * 11 + attempt) % 20000


@dataclass(frozen=True)
class AgentLaunch:
    """What the agent is about to exec on this node (pure result, testable)."""

    argv: list[str]
    env: dict[str, str]
    node_rank: int
    nnodes: int
    world_size: int
    supernode: str
    devices: tuple[int, ...]


def _visible_devices(env: dict[str, str], vendor: str, visible: Sequence[int]) -> None:
    """The node's devices for its ranks, by the vendor's variable."""
    devices = ",".join(str(d) for d in visible)
    if vendor == "ascend":
        env["ASCEND_RT_VISIBLE_DEVICES"] = devices
    else:
        # Device ids in the site are nvidia-smi's (PCI bus order), not CUDA's default order.
        env.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
        env["CUDA_VISIBLE_DEVICES"] = devices


def _module_from_snapshot(env: dict[str, str], snap: Mapping[str, Any]) -> None:
    """A ``-m`` module runs from the job's code snapshot, not the live working directory."""
    if snap.get("module"):
        # `python -m` would put the live working directory first on sys.path: the module is
        # found in the job's code snapshot instead (PYTHONSAFEPATH: Python >= 3.11).
        paths = [snap["dir"], *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
        env["PYTHONPATH"] = os.pathsep.join(paths)
        env["PYTHONSAFEPATH"] = "1"


def _fork_options(env: dict[str, str], inputs: JobInputs, program: list[str]) -> list[str]:
    """torchrun's options for workers forked from it (``--fork-workers``); ``program[0]``
    becomes absolute."""
    if not inputs.fork_workers:
        return []
    # torchrun's --run-path runs the script by runpy in workers forked from torchrun itself
    # (torch already imported there); it wants an absolute path. Unbuffered output, as
    # torchrun's `python -u` would give spawned workers.
    # rank_entry.py runs the script and prints a failing rank's traceback to the rank's own
    # stderr (torchrun's fork wrapper hands it to its summary only).
    fork = ["--run-path", "--start-method=fork", RANK_ENTRY]
    program[0] = os.path.join(inputs.workdir or os.getcwd(), program[0])
    env.setdefault("PYTHONUNBUFFERED", "1")
    # torchrun asks torch.cuda.is_available(); by default that initialises CUDA in torchrun
    # and a forked worker then refuses CUDA ("Cannot re-initialize CUDA in forked
    # subprocess", seen on H200). The NVML-based check leaves CUDA untouched.
    env.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    return fork


def plan_agent_launch(
    inputs: JobInputs,
    site: Site,
    rank_map: RankMap,
    hostname: str,
    environ: Mapping[str, str],
    *,
    attempt: int,
    job_id: int,
    master_port_override: int | None = None,
    log_dir: str | None = None,
) -> AgentLaunch:
    """torchrun command and environment for this node. Pure. ``environ`` is passed through to
    torchrun, not interpreted (JobEnvironment does that). ``log_dir``: where torchrun keeps this
    node's rank logs and error files."""
    try:
        node = rank_map.node(hostname)
    except KeyError:
        raise JobError(f"node {hostname} is not part of the rank map") from None
    env = _node_env(environ, site, rank_map, node, attempt)
    port = master_port_override or master_port(job_id, attempt)
    master = rank_map.master.hostname
    python = inputs.python or sys.executable
    program = list(inputs.program_argv)
    _module_from_snapshot(env, inputs.snapshot or {})
    fork = _fork_options(env, inputs, program)
    logs: list[str] = []
    if log_dir:
        # Per-rank stdout/stderr files and torchelastic error files in the job directory
        # (snrun logs, snrun status); --tee keeps the output in the Slurm log as well.
        logs = [f"--log-dir={log_dir}", "--redirects=3", "--tee=3"]
        env.update(forensics_env(env, log_dir, site.vendor, installed_torch()))
        if fork:
            env[EXITS_ENV] = rank_exits_dir(log_dir)
    argv = [
        python,
        FAST_EXIT,
        "-m",
        "torch.distributed.run",
        f"--nnodes={len(rank_map.nodes)}",
        f"--nproc-per-node={rank_map.nproc_per_node}",
        f"--node-rank={node.node_rank}",
        f"--master-addr={master}",
        f"--master-port={port}",
        *logs,
        *fork,
        *program,
    ]
    return AgentLaunch(
        argv=argv,
        env=env,
        node_rank=node.node_rank,
        nnodes=len(rank_map.nodes),
        world_size=rank_map.world_size,
        supernode=node.supernode,
        devices=node.visible_devices,
    )


def _node_env(
    environ: Mapping[str, str], site: Site, rank_map: RankMap, node: NodePlacement, attempt: int
) -> dict[str, str]:
    """torchrun's environment on ``node``: the job's, its devices, and snrun's own variables."""
    env = dict(environ)
    env.setdefault("OMP_NUM_THREADS", "1")  # what torchrun would set, without its warning
    _visible_devices(env, site.vendor, node.visible_devices)
    env.update(
        {
            "SNRUN_SUPERNODE": node.supernode,
            "SNRUN_NODE_RANK": str(node.node_rank),
            "SNRUN_NNODES": str(len(rank_map.nodes)),
            "SNRUN_WORLD_SIZE": str(rank_map.world_size),
            "SNRUN_ATTEMPT": str(attempt),
            "SNRUN_LAYOUT": json.dumps(rank_map.layout.as_dict(), sort_keys=True),
        }
    )
    return env


def _add_rank_table(
    launch: AgentLaunch,
    job_dir: Path,
    site: Site,
    rank_map: RankMap,
    hostname: str,
    environ: Mapping[str, str],
    job_id: int,
    attempt: int,
) -> None:
    """Ascend: the job's HCCL rank table (built with the other nodes) in the ranks' env."""
    try:
        launch.env.update(
            ascend_rank_table(job_dir, site, rank_map, hostname, environ, job_id, attempt)
        )
    except SnrunError as exc:
        # before torchrun: one line, and a node_exit so the supervisor sees a failed
        # start on every node (not nodes that never reported)
        from slurm_supernode.runtime import ledger

        ledger.append(
            job_dir,
            "node_exit",
            attempt=attempt,
            job_id=job_id,
            node=hostname,
            exit_code=exc.exit_code,
            error=str(exc),
            # bad input (a rank table that cannot be built from the site and the hardware):
            # a rerun would fail the same way; a timeout is no such error
            config_error=isinstance(exc, InputError),
        )
        raise


def _record_launch(launch: AgentLaunch, job_dir: Path, hostname: str, attempt: int) -> None:
    """env/<node>.<attempt>.json: the command and the variables worth keeping (snrun logs
    and status map local ranks to global ones with it)."""
    keep = {k: v for k, v in launch.env.items() if k.startswith(_KEEP_PREFIXES)}
    write_json_atomic(
        job_dir / "env" / f"{hostname}.{attempt}.json",
        {"argv": launch.argv, "node_rank": launch.node_rank, "env": keep},
    )


def container_launch(
    spec: ContainerSpec,
    launch: AgentLaunch,
    inputs: JobInputs,
    job_dir: Path,
    environ: Mapping[str, str],
    hostname: str,
) -> ContainerLaunch:
    """Write this node's container files (enter script, OCI bundle) and return what to run:
    torchrun inside the job's container, the agent on the host."""
    from slurm_supernode.forensics.env import ERROR_HOOK_DIR
    from slurm_supernode.runtime.container_launch import (
        plan_container_launch,
        read_image_config,
        write_launch_files,
    )

    try:
        names = list(json.loads((job_dir / "env.json").read_text()))
    except (OSError, ValueError):
        names = []
    job_env = JobEnvironment.from_environ(environ)
    plan = plan_container_launch(
        spec,
        launch.argv,
        launch.env,
        base_env=environ,
        names=names,
        job_dir=job_dir,
        hostname=hostname,
        attempt=job_env.attempt,
        job_id=job_env.job_id or 0,
        vendor=inputs.vendor,
        # snrun's own files the ranks run inside: the error hook and (forked workers) the
        # rank entry, read-only at the same path
        extra_mounts=[f"{d}:{d}:ro" for d in (ERROR_HOOK_DIR, os.path.dirname(RANK_ENTRY))],
        image_config=read_image_config(spec),
        home=environ.get("HOME"),
    )
    write_launch_files(plan)
    print(
        f"snrun: {hostname}: torchrun in {spec.runtime} container {spec.image}",
        file=sys.stderr,
        flush=True,
    )
    return plan


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


def rank_exits_dir(log_dir: str) -> str:
    """Where this node's forked ranks mark a clean exit (``runtime/rank_entry``)."""
    return os.path.join(log_dir, "rank-exits")


def _run_torchrun(
    launch: AgentLaunch,
    inputs: JobInputs,
    job_dir: Path,
    environ: Mapping[str, str],
    hostname: str,
    log_dir: str,
) -> tuple[ChildExit, dict[str, object]]:
    """Run torchrun, on the host or in the job's container: (how it ended, extra ledger
    fields: ``container_failed`` when the container never started, ``stopped`` when the agent
    stopped it because another node failed first)."""
    cpu_mark = Path(log_dir) / "cpu"  # progress for hang detection
    stop = None
    if failfast.enabled(environ):
        stop = failfast.StopWatch(job_dir, JobEnvironment.from_environ(environ).attempt, hostname)
    container = inputs.container_spec()
    if container is None:
        done = run_child(
            launch.argv,
            launch.env,
            shield_launcher=inputs.fork_workers,
            cpu_mark=cpu_mark,
            stop=stop,
            exits=launch.env.get(EXITS_ENV),
        )
        return done, _stopped(done)
    plan = container_launch(container, launch, inputs, job_dir, environ, hostname)
    done = run_child(
        plan.argv,
        environ,
        cpu_mark=cpu_mark,
        launcher=lambda: torchrun_pids(log_dir),
        stop=stop,
        exits=launch.env.get(EXITS_ENV),
    )
    started = os.path.exists(plan.started)
    if done.code != 0 and not done.stopped and not started:
        # the enter script never ran: the image or the runtime failed, not the training
        from slurm_supernode.runtime.container_launch import runtime_error, runtime_output

        error, output = runtime_error(done.tail, done.code), runtime_output(done.tail)
        return done, {"container_failed": True, "error": error, "output": output}
    if done.stopped and not started:
        # stopped because another node failed first, before this node's container started:
        # whether the image starts here is unknown (classify: a container that started nowhere)
        return done, {**_stopped(done), "container_unstarted": True}
    return done, _stopped(done)


def _stopped(done: ChildExit) -> dict[str, object]:
    """Ledger fields of a torchrun the agent stopped on the supervisor's request (fail fast)."""
    return {"stopped": done.stopped} if done.stopped else {}


def run_agent(
    job_dir: Path,
    environ: Mapping[str, str] | None = None,
    program_argv: list[str] | None = None,
) -> int:
    """Entry of ``snrun agent``: compute, record, run torchrun; returns its exit code."""
    from slurm_supernode.site.loader import load_site

    environ = dict(os.environ if environ is None else environ)
    job_env = JobEnvironment.from_environ(environ)
    inputs = load_inputs(job_dir)
    if program_argv:
        inputs = dataclasses.replace(inputs, program_argv=tuple(program_argv))
    site = load_site(inputs.site_file)
    hosts = job_env.hosts()
    if not inputs.allow_partial:
        problems = whole_supernode_problems(site, hosts)
        if problems:
            raise JobError("allocation is not whole super nodes: " + "; ".join(problems))
    rank_map = rank_map_for_job(inputs, site, hosts)
    hostname = job_env.hostname()
    attempt = job_env.attempt
    job_id = job_env.job_id or 0
    from slurm_supernode.forensics.logs import node_log_dir
    from slurm_supernode.runtime.imex_agent import imex_gate

    imex = imex_gate(job_dir, site, hosts, hostname, attempt, job_id)  # before rendezvous
    if imex.exit_code is not None:
        return imex.exit_code

    launch = plan_agent_launch(
        inputs,
        site,
        rank_map,
        hostname,
        environ,
        attempt=attempt,
        job_id=job_id,
        master_port_override=job_env.master_port,
        log_dir=str(node_log_dir(job_dir, attempt, hostname)),
    )
    if site.vendor == "ascend":
        _add_rank_table(launch, job_dir, site, rank_map, hostname, environ, job_id, attempt)
    # where a forked rank that raises records it at once (runtime/rank_entry.py)
    launch.env.update({"SNRUN_JOB_DIR": str(job_dir), "SNRUN_NODE": hostname} | imex.env)
    from slurm_supernode.runtime import node_watch, sampler  # samples, textfile (observe.md)

    launch.env.update(sampler.rank_env(site.observe, launch.env))
    _record_launch(launch, job_dir, hostname, attempt)
    os.chdir(inputs.workdir or os.getcwd())
    log_dir = str(node_log_dir(job_dir, attempt, hostname))
    stop_watch = node_watch.start_node_watch(
        job_dir, attempt, job_id, hostname, site, rank_map, launch.devices, environ
    )
    done, extra = _run_torchrun(launch, inputs, job_dir, environ, hostname, log_dir)
    stop_watch()
    code = done.code
    from slurm_supernode.runtime import ledger
    from slurm_supernode.runtime.signal_deaths import record_signal_deaths, unreported
    from slurm_supernode.runtime.torchrun_report import parse_failures, rank_pids

    failed = code and not set(extra) - {"stopped"}
    ranks = parse_failures(done.tail) if failed else []
    if ranks:
        extra["ranks"] = ranks
    if failed and site.imex_channels:  # NCCL saying this tray lacks its channel: cause imex
        from slurm_supernode.runtime.imex_cause import nccl_imex_in_logs

        nccl = nccl_imex_in_logs(done.tail, Path(log_dir))
        if nccl:
            extra |= {"imex_failed": True, "error": f"NCCL: {nccl}"}
    # a rank killed by a signal wrote nothing itself: recorded here, dated when it died; those
    # the agent saw die that torchrun's report leaves out too
    seen = unreported(done.deaths, ranks) if failed else []
    if ranks or seen:
        record_signal_deaths(
            job_dir,
            attempt=attempt,
            node=hostname,
            ranks=ranks + seen,
            pids=rank_pids(done.tail) | {d["rank"]: d["pid"] for d in seen},
            last_seen=done.last_seen,
            fallback=time.time(),
        )
    ledger.append(
        job_dir,
        "node_exit",
        attempt=attempt,
        job_id=job_id,
        node=hostname,
        exit_code=code,
        **extra,
    )
    return code


def ascend_rank_table(
    job_dir: Path,
    site: Site,
    rank_map: RankMap,
    hostname: str,
    environ: Mapping[str, str],
    job_id: int,
    attempt: int,
) -> dict[str, str]:
    """Merge the job's rank table from every node's hardware values (``runtime.ranktable``);
    node rank 0 prints the notes (value sources, version, logical pod ids), one line each."""
    from slurm_supernode.runtime.ranktable import (
        MODE_ENV,
        prepare_rank_table,
        rank_table_env,
        rank_table_mode,
    )

    mode = rank_table_mode(environ)
    first = rank_map.node(hostname).node_rank == 0
    if mode == "off":
        if first:
            print(
                f"snrun: note: no HCCL rank table ({MODE_ENV}=off): torch_npu negotiates itself",
                file=sys.stderr,
                flush=True,
            )
        return {}
    path, notes = prepare_rank_table(
        job_dir,
        site,
        rank_map,
        hostname,
        job_id=job_id,
        attempt=attempt,
        environ=environ,
        version=None if mode == "auto" else mode,
    )
    if first:
        for note in notes:
            print(f"snrun: note: {note}", file=sys.stderr, flush=True)
    return rank_table_env(path)


def _descendants(pid: int) -> list[int]:
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


class StderrTail:
    """Copy a child's stderr through to ours as it comes, keeping the last ``keep`` bytes (torchrun
    prints which ranks failed there). A thread, so the child never blocks on a full pipe."""

    def __init__(self, fd: int, keep: int = 256 * 1024, out_fd: int = 2) -> None:
        import threading

        self._fd, self._keep, self._out = fd, keep, out_fd
        self._buf = bytearray()
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        writable = True
        while True:
            try:
                chunk = os.read(self._fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            view = memoryview(chunk)
            while writable and view:
                try:
                    view = view[os.write(self._out, view) :]
                except OSError:
                    writable = False  # our stderr is gone: keep draining the child's
            self._buf += chunk
            if len(self._buf) > 2 * self._keep:
                del self._buf[: -self._keep]

    def holds(self, markers: Sequence[bytes]) -> bool:
        """Has the child printed one of ``markers`` (in what is kept)?"""
        kept = bytes(self._buf)
        return any(marker in kept for marker in markers)

    def text(self, timeout: float = 2.0) -> str:
        """What was kept, once the pipe closed (or after ``timeout``: a worker that outlives
        torchrun may hold it open)."""
        self._thread.join(timeout)
        return bytes(self._buf[-self._keep :]).decode("utf-8", errors="replace")


def _ignore_usr_signals() -> None:
    import signal

    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    signal.signal(signal.SIGUSR2, signal.SIG_IGN)


class ChildExit(NamedTuple):
    """How torchrun (or the container around it) ended."""

    code: int  # its exit code (128 + N for signal N)
    tail: str  # the tail of its stderr (torchrun's failure report)
    stopped: str | None = None  # why the agent stopped it (fail fast), or None
    # torchrun's children (its ranks) -> when the agent last saw each alive (wall clock)
    last_seen: Mapping[int, float] = MappingProxyType({})
    # ranks the agent saw die of a signal, as torchrun's report has them (``_RankSightings``)
    deaths: tuple[dict[str, Any], ...] = ()


# What torchrun prints once it ends its ranks on its own (torch's elastic/multiprocessing: it
# stops the other ranks of a node whose rank failed) and its failure report's first line
ENDING_ON_ITS_OWN = (b"Closing process ", b" closing signal ", b"ChildFailedError")
# How long torchrun may take to exit after it stopped its ranks on SIGTERM (its own teardown,
# under load) before the agent treats it as stuck in the exit barrier and kills it.
STOPPED_TEARDOWN = 2.0


def _children(pid: int) -> list[int]:
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


def _zombie_signal(pid: int) -> int | None:
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


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class _RankSightings:
    """When each of torchrun's children (its ranks) was last seen alive: a rank killed by a
    signal died after that time (``runtime/signal_deaths``). ``killed``: children seen dead of
    a signal that is a cause before torchrun reaped them (pid -> signal): a loaded torchrun may
    notice seconds later. ``vanished``: ranks seen alive, now gone without the clean-exit mark
    of ``exits`` (forked ranks leave one, ``runtime/rank_entry``): torchrun reaped a rank that
    died before the agent saw its zombie, and stops the rank's siblings without a word (seconds
    when one is stuck in a collective). torchrun's PIDs are looked up until found, then kept
    (in a container that lookup scans /proc)."""

    def __init__(self, roots: Callable[[], list[int]], exits: str | None = None) -> None:
        self._roots = roots
        self._exits = exits
        self._found: list[int] = []
        self._ranks: set[int] = set()  # children seen alive that are ranks
        self.last_seen: dict[int, float] = {}
        self.killed: dict[int, int] = {}
        self.vanished: set[int] = set()

    def look(self) -> None:
        from slurm_supernode.runtime.signal_deaths import STOP_SIGNALS

        if not self._found:
            self._found = self._roots()
        now = time.time()
        present = set()
        for root in self._found:
            for child in _children(root):
                present.add(child)
                sig = _zombie_signal(child)
                if sig is None:
                    self.last_seen[child] = now
                    if child not in self._ranks and _is_worker(child):
                        self._ranks.add(child)
                elif sig and _signal_name(sig) not in STOP_SIGNALS:
                    self.killed[child] = sig
        if self._exits is not None:
            self._look_for_vanished(present, self._exits)

    def _look_for_vanished(self, present: set[int], exits: str) -> None:
        from slurm_supernode.runtime.rank_entry import exit_mark

        for pid in self._ranks - present - self.vanished:
            if not os.path.exists(exit_mark(exits, pid)):
                self.vanished.add(pid)

    def deaths(self) -> tuple[dict[str, Any], ...]:
        """The forked ranks that died of a signal, as entries of torchrun's report (rank,
        local_rank, exit_code, signal, pid): killed ones seen as zombies, with their signal;
        vanished ones without a failure mark (no exception, no exit code), signal unknown
        (``exit_code`` None). Their ranks come from the marks they wrote at their start."""
        from slurm_supernode.runtime.rank_entry import failed_mark, read_rank_mark

        if self._exits is None:
            return ()
        out = []
        silent = {p for p in self.vanished if not os.path.exists(failed_mark(self._exits, p))}
        for pid in sorted(set(self.killed) | silent):
            ranks = read_rank_mark(self._exits, pid)
            if ranks is None:
                continue
            sig = self.killed.get(pid)
            entry: dict[str, Any] = {"rank": ranks[0], "local_rank": ranks[1], "pid": pid}
            entry |= {"exit_code": -sig, "signal": _signal_name(sig)} if sig else {
                "exit_code": None, "signal": "unknown"}  # fmt: skip
            out.append(entry)
        return tuple(out)


def _is_worker(pid: int) -> bool:
    """A process below torchrun that is a rank (not multiprocessing's resource tracker, which
    lives as long as torchrun in spawn mode)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return b"resource_tracker" not in fh.read()
    except OSError:
        return False


def _stop_launcher(roots: list[int], workers: list[int]) -> None:
    """Stop torchrun: SIGTERM while its ranks live (it stops them as it always does); SIGKILL
    once none is left (it waits in torchelastic's exit barrier then, where a signal is only
    handled when a blocking store call returns: 10-25 s measured with torch 2.13)."""
    import signal

    sig = signal.SIGTERM if workers else signal.SIGKILL
    for pid in roots:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


class _LauncherStop:
    """Carries out this node's fail-fast stop request on torchrun (``roots``): looked at every
    0.1 s while it runs. ``reason``: why it was stopped, once it was."""

    def __init__(
        self,
        stop: Callable[[], failfast.StopRequest | None],
        roots: Callable[[], list[int]],
        below: Callable[[], list[int]],
        reported: Callable[[], bool] = lambda: False,
    ) -> None:
        self._stop, self._roots, self._below = stop, roots, below
        self._reported = reported  # torchrun already ends its ranks on its own
        self.reason: str | None = None
        self._ranks_gone: float | None = None  # since when the stopped torchrun has no rank
        self._spared = False  # its own rank failed: it is left to end by itself

    def _workers(self) -> list[int]:
        return [pid for pid in self._below() if _is_worker(pid)]

    def look(self) -> None:
        if self.reason is None:
            request = self._stop()
            if request is None:
                return
            if self._spared or self._reported():
                # its own rank failed (one killed by a signal, say, whose peers' errors came
                # first): a failing node, left alone like those the request names, so torchrun
                # reports its ranks (stopping a rank stuck in a collective takes torch seconds
                # under load); the supervisor's grace still ends a step that never ends
                self._spared = True
                return
            self.reason = request.reason
            _stop_launcher(self._roots(), self._workers())
        elif self._workers():
            self._ranks_gone = None
        elif self._ranks_gone is None:
            self._ranks_gone = time.monotonic()
        elif time.monotonic() - self._ranks_gone > STOPPED_TEARDOWN:
            # its ranks are gone and it still lives: it went on into the exit barrier
            _stop_launcher(self._roots(), [])


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
    is stopped (``_stop_launcher``) and the result says why; not while its own rank failed
    (a torchrun that ends on its own, a rank seen dead, or gone without the clean-exit mark in
    ``exits``, the folder forked ranks mark)."""
    import signal
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
        return [pid for root in roots() for pid in _descendants(root)]

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
    sightings = _RankSightings(roots, exits)

    def ends_on_its_own() -> bool:
        sightings.look()  # now: the rank may have died since the last look
        failed = sightings.killed or sightings.vanished
        return bool(failed) or tail.holds(ENDING_ON_ITS_OWN)

    stopper = None if stop is None else _LauncherStop(stop, roots, below, ends_on_its_own)
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
