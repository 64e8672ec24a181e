"""A running (or finished) job's figures from Python: ``snrun metrics``, ``snrun top`` and the
report call these. The files are read here; the reduction is observe/summary.py (pure).

    from slurm_supernode.api.metrics import job_metrics
    s = job_metrics(12345)            # the current attempt
    s.step_s, s.node("sn0-n0").devices, s.missing
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from slurm_supernode.errors import InputError

if TYPE_CHECKING:
    from slurm_supernode.observe.summary import AttemptRecords, AttemptSummary, JobContext

CHECKPOINT_SCAN_LIMIT = 10_000  # files looked at for the newest checkpoint
# the summary reads each record file's last 64 KiB only (a rank's steps file grows all day:
# 64 ranks x 20k steps took 52 s to read whole on a loaded 2-core host): enough for many
# sampling rounds and for 1 KiB per step of the window
LIVE_TAIL_BYTES = 64 << 10


def _check_job(job: object) -> None:
    from slurm_supernode.api.arguments import check_job_ref

    if isinstance(job, bool) or not isinstance(job, (int, str, os.PathLike)):
        raise InputError(
            f"job must be a job id (int or str) or a job directory, got {type(job).__name__}",
            where="job",
        )
    check_job_ref(os.fspath(job) if isinstance(job, os.PathLike) else job)  # > 0, no NUL


def _check_text(value: object, where: str) -> None:
    from slurm_supernode.api.arguments import check_text

    if isinstance(value, (str, os.PathLike)):
        check_text(str(os.fspath(value)), where)


def _check_attempt(attempt: object) -> None:
    if attempt is None:
        return
    if isinstance(attempt, bool) or not isinstance(attempt, int):
        raise InputError(f"attempt must be an int, got {type(attempt).__name__}", where="attempt")
    if attempt < 0:
        raise InputError(f"attempt must be >= 0, got {attempt}", where="attempt")


def _check_window(window: object) -> None:
    if isinstance(window, bool) or not isinstance(window, int):
        raise InputError(f"window must be an int, got {type(window).__name__}", where="window")
    if window < 1:
        raise InputError(f"window must be >= 1 (steps), got {window}", where="window")


def _check_dirs(jobs_dir: object, site: object) -> None:
    if jobs_dir is not None and not isinstance(jobs_dir, (str, os.PathLike)):
        raise InputError(
            f"jobs_dir must be a path, got {type(jobs_dir).__name__}", where="jobs_dir"
        )
    if site is not None and not isinstance(site, str):
        raise InputError(f"site must be a name or path, got {type(site).__name__}", where="site")
    _check_text(jobs_dir, "jobs_dir")
    _check_text(site, "site")


def job_dir_of(
    job: int | str | os.PathLike[str], *, jobs_dir: str | os.PathLike[str] | None, site: str | None
) -> Path:
    from slurm_supernode.api.status import find_job_dir

    _check_job(job)
    _check_dirs(jobs_dir, site)
    return find_job_dir(
        os.fspath(job) if isinstance(job, os.PathLike) else job,
        jobs_dir=os.fspath(jobs_dir) if jobs_dir is not None else None,
        site=site,
    )


def job_metrics(
    job: int | str | os.PathLike[str],
    *,
    attempt: int | None = None,
    window: int | None = None,
    jobs_dir: str | os.PathLike[str] | None = None,
    site: str | None = None,
) -> AttemptSummary:
    """The summary of a job's current attempt (or attempt ``attempt``): per node the newest
    device and node figures, step times (median of the last ``window`` steps per rank), the
    communication share against the plan, slow marks; what is unknown is in ``missing``."""
    from slurm_supernode.observe.summary import DEFAULT_WINDOW

    _check_attempt(attempt)
    window = DEFAULT_WINDOW if window is None else window
    _check_window(window)
    job_dir = job_dir_of(job, jobs_dir=jobs_dir, site=site)
    summary, _ = attempt_metrics(job_dir, attempt, window)
    return summary


def job_report(
    job: int | str | os.PathLike[str],
    *,
    attempt: int | None = None,
    window: int | None = None,
    jobs_dir: str | os.PathLike[str] | None = None,
    site: str | None = None,
) -> str:
    """The job's HTML report (one self-contained page) of its current attempt or ``attempt``."""
    from slurm_supernode.api.metrics_html import render_report
    from slurm_supernode.observe.summary import DEFAULT_WINDOW

    _check_attempt(attempt)
    window = DEFAULT_WINDOW if window is None else window
    _check_window(window)
    from slurm_supernode.observe.over_time import attempt_over_time

    job_dir = job_dir_of(job, jobs_dir=jobs_dir, site=site)
    summary, _ = attempt_metrics(job_dir, attempt, window)
    return render_report(summary, attempt_over_time(job_dir, summary.attempt))


def attempt_metrics(
    job_dir: Path,
    attempt: int | None,
    window: int,
    now: float | None = None,
) -> tuple[AttemptSummary, AttemptRecords]:
    """The summary and the records it came from: the newest of each file (the report reads
    the whole attempt through ``observe/over_time``)."""
    if not isinstance(job_dir, Path):
        raise InputError(f"job_dir must be a Path, got {type(job_dir).__name__}", where="job_dir")
    _check_attempt(attempt)
    _check_window(window)
    if now is not None and (isinstance(now, bool) or not isinstance(now, (int, float))):
        raise InputError(f"now must be seconds since the epoch, got {now!r}", where="now")
    from slurm_supernode.observe.attempt_files import load_attempt
    from slurm_supernode.observe.summary import summarize

    ctx = job_context(job_dir, attempt)
    tail = max(LIVE_TAIL_BYTES, window << 10)
    records = load_attempt(job_dir, ctx.attempt, tail_bytes=tail)
    return summarize(records, ctx, time.time() if now is None else now, window), records


def job_context(job_dir: Path, attempt: int | None) -> JobContext:
    """Which attempt, its nodes and their super nodes, whose job, the newest checkpoint."""
    from slurm_supernode.chain import ledger
    from slurm_supernode.hostlist import HostlistError, expand
    from slurm_supernode.observe.records import attempts as observed_attempts
    from slurm_supernode.observe.summary import JobContext

    chain = ledger.fold(ledger.read(job_dir))
    known = sorted({a.attempt for a in chain.attempts} | set(observed_attempts(job_dir)))
    if attempt is None:
        attempt = known[-1] if known else 0
    elif attempt not in known:
        raise InputError(
            f"job {job_dir.name} has no attempt {attempt}",
            where="attempt",
            hint="attempts: " + (", ".join(map(str, known)) or "none yet"),
        )
    entry = next((a for a in chain.attempts if a.attempt == attempt), None)
    nodes: list[str] = []
    if entry is not None and entry.nodes:
        try:
            nodes = expand(entry.nodes)
        except HostlistError:
            nodes = []
    if chain.final is not None and attempt == (known[-1] if known else attempt):
        state = str(chain.final.get("state") or "ENDED")
    elif entry is not None and entry.end is None:
        state = "RUNNING"
    else:
        state = "ENDED" if entry is not None else "PENDING"
    return JobContext(
        job_id=entry.job_id if entry and entry.job_id else ledger.current_job_id(job_dir),
        user=_owner(job_dir),
        attempt=attempt,
        nodes=tuple(nodes),
        supernode_of=_supernodes(job_dir, nodes),
        checkpoint_t=newest_checkpoint(job_dir / "checkpoints"),
        job_dir=str(job_dir),
        state=state,
    )


def _owner(job_dir: Path) -> str:
    import pwd

    try:
        uid = job_dir.stat().st_uid
        return pwd.getpwuid(uid).pw_name
    except (OSError, KeyError):
        return str(os.getuid())


def _supernodes(job_dir: Path, nodes: list[str]) -> dict[str, str]:
    """node -> super node, from the job's copy of the site (empty when it cannot be read)."""
    from slurm_supernode.errors import SnrunError
    from slurm_supernode.launch.inputs import JobInputs
    from slurm_supernode.site.loader import load_site

    try:
        site = load_site(JobInputs.read(job_dir).site_file)
    except (SnrunError, OSError, ValueError):
        return {}
    return {n: site.supernode_of(n).name for n in nodes if site.has_node(n)}


def newest_checkpoint(folder: Path) -> float | None:
    """The newest file time under the checkpoint folder (``SNRUN_CHECKPOINT_DIR``'s default)."""
    newest = None
    seen = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            seen += 1
            if seen > CHECKPOINT_SCAN_LIMIT:
                return newest
            try:
                t = os.stat(os.path.join(root, name)).st_mtime
            except OSError:
                continue
            newest = t if newest is None else max(newest, t)
    return newest


def newest_running_job(
    *, jobs_dir: str | os.PathLike[str] | None = None, site: str | None = None, last: int = 20
) -> Path | None:
    """The user's newest chain that is running, as ``snrun status`` lists them (one Slurm
    query for all), for ``snrun top`` without a job."""
    from slurm_supernode.api.status import recent_chains

    _check_dirs(jobs_dir, site)
    if isinstance(last, bool) or not isinstance(last, int) or last < 1:
        raise InputError(f"last must be an int >= 1, got {last!r}", where="last")
    _root, rows = recent_chains(
        last, jobs_dir=os.fspath(jobs_dir) if jobs_dir is not None else None, site=site
    )
    return next((Path(r["job_dir"]) for r in rows if r.get("state") == "RUNNING"), None)
