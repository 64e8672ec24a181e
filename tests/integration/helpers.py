"""Run snrun like a user does (a subprocess of the real CLI) against the local cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "contrib" / "examples"


def pythonpath() -> str:
    """This checkout first, then the session's PYTHONPATH (on 25.11 the fixture's pyslurm: an
    snrun subprocess without it fails under SNRUN_SLURM_BACKEND=pyslurm)."""
    rest = os.environ.get("PYTHONPATH")
    return str(ROOT) + (os.pathsep + rest if rest else "")


def snrun(
    *args: str, jobs: Path, timeout: float = 240, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PYTHONPATH": pythonpath(), "SNRUN_SITE": "local"}
    out = subprocess.run(
        [sys.executable, "-m", "slurm_supernode", *_with_jobs_dir(args, jobs)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=str(jobs.parent),
    )
    if check and out.returncode != 0:
        raise AssertionError(f"snrun {args} exited {out.returncode}: {out.stderr[-2000:]}")
    return out


def _with_jobs_dir(args: tuple[str, ...], jobs: Path) -> list[str]:
    """Submission takes --jobs-dir first; status/cancel after their name; others not at all."""
    if args and args[0] in ("status", "cancel", "logs", "attach", "metrics", "top"):
        return [args[0], "--jobs-dir", str(jobs), *args[1:]]
    if args and args[0] in ("plan", "site", "bench", "health"):
        return list(args)
    return ["--jobs-dir", str(jobs), *args]


def submit(*args: str, jobs: Path, timeout: float = 240) -> tuple[int, Path]:
    """Submit with --parsable; returns (job id, job dir)."""
    out = snrun("--parsable", *args, jobs=jobs, timeout=timeout)
    job_id = int(out.stdout.strip().splitlines()[-1])
    return job_id, (jobs / "by-id" / str(job_id)).resolve()


def ledger(job_dir: Path) -> list[dict]:
    path = job_dir / "ledger.jsonl"
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def wait_final(job_dir: Path, timeout: float = 240, queued: float = 900) -> dict:
    """The chain's final ledger record, within ``timeout`` s of running. Time its job spends
    pending in Slurm's queue (behind the previous test's ending jobs on a loaded machine: 4.5
    min seen) does not count, up to ``queued`` s in all: the condition Slurm reports."""
    deadline = time.monotonic() + timeout
    waited = 0.0  # seconds seen pending
    while time.monotonic() < deadline + waited:
        finals = [r for r in ledger(job_dir) if r["event"] == "final"]
        if finals:
            return finals[-1]
        before = time.monotonic()
        time.sleep(1)
        if waited < queued and _pending(job_dir):
            waited += time.monotonic() - before
    logs = "\n".join(p.read_text()[-3000:] for p in (job_dir / "logs").glob("*.out"))
    raise AssertionError(
        f"no final state in {timeout}s (+{waited:.0f}s pending); ledger={ledger(job_dir)}\n{logs}"
    )


def _pending(job_dir: Path) -> bool:
    """Does Slurm hold the chain's newest job in its queue (not started yet)?"""
    from slurm_supernode.slurm.job_lookup import job_info

    try:
        job_id = json.loads((job_dir / "job.json").read_text())["job_ids"][-1]
        info = job_info(int(job_id))
    except Exception:  # no record yet, or Slurm busy: not known to be pending
        return False
    return info is not None and info.state.phase == "PENDING"


def wait_for(pred, timeout: float, what: str, poll: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def attempts(job_dir: Path) -> list[dict]:
    return [r for r in ledger(job_dir) if r["event"] == "attempt_end"]
