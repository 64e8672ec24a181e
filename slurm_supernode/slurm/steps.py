"""Job steps: the supervisor's ``srun`` (one task per node across the whole allocation).

Kept in the Slurm layer with the other commands, so the runtime never spawns a Slurm binary
itself. The step runs in the background (``start_step``) because the supervisor watches it for
hangs and forwards signals to it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence

from slurm_supernode.errors import SlurmError, SlurmErrorKind


def step_command(
    node_count: int, het_size: int, command: Sequence[str], *, output: str | None = None
) -> list[str]:
    """``srun`` running ``command`` once per node (every component of a het job)."""
    cmd = ["srun", "--kill-on-bad-exit=0", "--ntasks-per-node=1", "--export=ALL"]
    if het_size > 1:
        cmd.append("--het-group=" + ",".join(str(i) for i in range(het_size)))
    else:
        cmd += [f"--nodes={node_count}", f"--ntasks={node_count}"]
    if output:
        cmd.append(f"--output={output}")
    return [*cmd, *command]


def overlap_argv(
    job_id: int, nodelist: str, nodes: int, *, kill_on_bad_exit: bool, export_all: bool = False
) -> list[str]:
    """``srun`` options of a step inside running job ``job_id``: one task on each of ``nodes``
    nodes of ``nodelist``, sharing the job's resources with its own steps (``--overlap``)."""
    argv = [
        "srun", f"--jobid={job_id}", "--overlap", f"--nodelist={nodelist}", f"--nodes={nodes}",
        f"--ntasks={nodes}", "--ntasks-per-node=1", f"--kill-on-bad-exit={int(kill_on_bad_exit)}",
    ]  # fmt: skip
    if export_all:
        argv.append("--export=ALL")
    return argv


def node_step_command(
    job_id: int | str, node: str, options: Sequence[str], command: Sequence[str]
) -> list[str]:
    """A one-task step on ``node`` of running job ``job_id`` beside the agent's own step
    (``--overlap``), started by that agent: how torchrun enters a pyxis or Slurm OCI container
    (``options``) while the agent stays on the host. ``--export=NONE``: the container keeps
    the image's environment (PATH, LD_LIBRARY_PATH...); the agent passes what the ranks need
    through the container's enter script. One task: the step's exit code is torchrun's."""
    head = overlap_argv(job_id, node, 1, kill_on_bad_exit=True)  # type: ignore[arg-type]
    return [*head, "--export=NONE", "--quiet", *options, *command]


def start_step(argv: Sequence[str], env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """Start a step in the background; a missing srun is a SlurmError (NOT_INSTALLED)."""
    try:
        return subprocess.Popen(list(argv), env=dict(env))
    except OSError as exc:
        raise SlurmError(
            f"{argv[0]} could not be started: {exc.strerror or exc}",
            kind=SlurmErrorKind.NOT_INSTALLED,
        ) from None


def run_step(
    argv: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = 300
) -> int:
    """Run a step to its end; its exit code (a step that outlives ``timeout`` is killed)."""
    try:
        return subprocess.run(
            list(argv), env=None if env is None else dict(env), timeout=timeout, check=False
        ).returncode
    except subprocess.TimeoutExpired:
        raise SlurmError(
            f"srun step did not end within {timeout:g} s", kind=SlurmErrorKind.TIMEOUT
        ) from None
    except OSError as exc:
        raise SlurmError(
            f"{argv[0]} could not be started: {exc.strerror or exc}",
            kind=SlurmErrorKind.NOT_INSTALLED,
        ) from None


def overlap_step(
    job_id: int,
    nodelist: str,
    nodes: int,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 1800,
    cwd: str | os.PathLike[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """One task per node of ``nodelist`` inside running job ``job_id`` (``snrun doctor
    --job``), sharing the job's resources with its own steps (``--overlap``: the job keeps
    running). Not checked: the caller reads the exit code."""
    from slurm_supernode.slurm.runner import run_slurm

    cmd = [
        *overlap_argv(job_id, nodelist, nodes, kill_on_bad_exit=True, export_all=True),
        *argv,
    ]
    return run_slurm(cmd, timeout=timeout, check=False, env=env, cwd=cwd)
