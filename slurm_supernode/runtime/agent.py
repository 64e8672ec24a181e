"""The per-node agent: one per node inside the job, started by the supervisor's srun step.

It recomputes the rank map locally from the site and the allocation (same inputs, same map
on every node), checks the allocation is whole super nodes, sets the device order and the
collective library's variables, writes the HCCL rank table on Ascend sites, and execs
torchrun with this node's rank as its child (so the node's exit code reaches the ledger).
No torch import here: torchrun is a separate program.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from slurm_supernode.errors import InputError, JobError, SnrunError
from slurm_supernode.fsutil import write_json_atomic
from slurm_supernode.jobenv import JobEnvironment
from slurm_supernode.launch.inputs import JobInputs, load_inputs, rank_map_for_job
from slurm_supernode.launch.request import whole_supernode_problems
from slurm_supernode.placement.model import RankMap
from slurm_supernode.runtime import failfast
from slurm_supernode.runtime.agent_container import container_launch
from slurm_supernode.runtime.agent_plan import AgentLaunch, plan_agent_launch
from slurm_supernode.runtime.proc_tree import torchrun_pids
from slurm_supernode.runtime.rank_entry import EXITS_ENV
from slurm_supernode.runtime.torchrun_child import ChildExit, run_child
from slurm_supernode.site.model import Site

# Variables worth keeping in the job directory to explain a run afterwards.
_KEEP_PREFIXES = ("NCCL_", "HCCL_", "TORCH_", "SNRUN_", "MASTER_", "CUDA_", "ASCEND_", "RANK_")


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
        from slurm_supernode.chain import ledger

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
    from slurm_supernode.chain import ledger
    from slurm_supernode.forensics.torchrun_report import parse_failures, rank_pids
    from slurm_supernode.runtime.signal_deaths import record_signal_deaths, unreported

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
