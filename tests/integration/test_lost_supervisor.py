"""A supervisor killed with SIGKILL on the real cluster (as the OOM killer or an admin would):
the batch shell ends the chain cleanly, and the job ends FAILED, never held with nobody to
release it. Where the cluster allows --requeue=expedite (26.05 in `make test-slurm`), snrun's
job uses it, and Slurm would requeue it held (REQUEUE_HOLD) for a non-zero exit."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from slurm_supernode.slurm import jobs
from tests.integration.helpers import snrun, submit, wait_final, wait_for
from tests.integration.test_resubmission import TRAIN, step_of

pytestmark = pytest.mark.slurm


def supervisor_of(job_id: int, job_dir: Path) -> int | None:
    """PID of the job's `snrun supervise`, by its job directory on its command line: job ids
    repeat across clusters run side by side (`make test` ran 22.05 and 24.11 beside 26.05, and
    killed another cluster's job 26's supervisor). A child it is starting (`srun`,
    `scontrol`) carries the same command line until its exec, and with wrapped PIDs it can come
    first in /proc: the one whose parent is not a match."""
    found: dict[int, int] = {}  # pid -> parent pid
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            env = set((entry / "environ").read_bytes().split(b"\0"))
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if (
            b"supervise" in argv
            and b"--lost" not in argv
            and f"SLURM_JOB_ID={job_id}".encode() in env
            and str(job_dir).encode() in argv
        ):
            found[int(entry.name)] = ppid
    roots = [pid for pid, ppid in found.items() if ppid not in found]
    return roots[0] if len(roots) == 1 else None


def test_sigkilled_supervisor_fails_the_chain_cleanly(slurm_cluster, tmp_path: Path) -> None:
    job_id, job_dir = submit(
        "-S", "1", "--nproc-per-node", "1", TRAIN, "--steps", "400", "--step-time", "0.5",
        jobs=tmp_path / "jobs",
    )  # fmt: skip
    wait_for(lambda: step_of(job_dir / "heartbeat") >= 2, 120, "progress")
    pid = wait_for(lambda: supervisor_of(job_id, job_dir), 30, "the supervisor's process")
    os.kill(pid, signal.SIGKILL)
    final = wait_final(job_dir, 120)
    assert final["state"] == "FAILED", final
    assert "supervisor died (exit 137 (SIGKILL)) while attempt 0 ran" in final["reason"]
    info = jobs.wait_for(job_id, set(), timeout=120)  # ends: never left held
    assert info.ended and not info.state.held, info
    status = json.loads(snrun("status", str(job_id), "--json", jobs=tmp_path / "jobs").stdout)
    assert status["state"] == "FAILED" and "SIGKILL" in status["reason"]
    assert status["attempts"][-1]["cause"] == "supervisor"
    expedite = (
        "--requeue=expedite" in json.loads((job_dir / "request.json").read_text())["sbatch_args"]
    )
    print(f"job {job_id}: {info.state} (expedite: {expedite}, Slurm {slurm_cluster.version})")
