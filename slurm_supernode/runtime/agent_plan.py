"""What the agent runs on its node: torchrun's command and environment, from the job's
inputs, the site and the rank map. Pure (``--dry-run`` shows it per node).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurm_supernode.errors import JobError
from slurm_supernode.forensics.env import forensics_env, installed_torch
from slurm_supernode.launch.inputs import JobInputs
from slurm_supernode.placement.model import NodePlacement, RankMap
from slurm_supernode.runtime.rank_entry import EXITS_ENV
from slurm_supernode.site.model import Site

RANK_ENTRY = str(Path(__file__).with_name("rank_entry.py"))
# what a spawned worker runs: the script or -m module, with the step hook once torch is imported
SPAWN_ENTRY = str(Path(__file__).with_name("spawn_entry.py"))


# torchrun's entry: its main(), then an exit without Python's teardown (a torch workaround)
FAST_EXIT = str(Path(__file__).with_name("torch_workarounds") / "fast_exit.py")


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
        # spawned workers: `python -u SPAWN_ENTRY SCRIPT|-m MODULE ARGS` (runtime/spawn_entry)
        program.insert(0, SPAWN_ENTRY)
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


def rank_exits_dir(log_dir: str) -> str:
    """Where this node's forked ranks mark a clean exit (``runtime/rank_entry``)."""
    return os.path.join(log_dir, "rank-exits")
