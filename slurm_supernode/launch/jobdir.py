"""The job directory: one folder per job chain with everything needed to understand it.

Layout: ``<jobs_dir>/<name>-<stamp>/`` holds ``job.sh`` (rendered script), ``request.json``,
``plan.json`` (agent inputs), ``env.json``, ``site.yaml`` (a copy: the job keeps the site it
was planned with), ``ledger.jsonl`` (attempts), ``logs/``. ``<jobs_dir>/by-id/<job id>`` links
to it so ``snrun status ID`` finds it.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from slurm_supernode.errors import InputError
from slurm_supernode.fsutil import expand_path
from slurm_supernode.user_settings import SnrunSettings

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def job_dir_name(job_name: str, stamp: float | None = None, token: str | None = None) -> str:
    """Folder name from the job name (made filesystem-safe), a timestamp and a random token."""
    safe = _SAFE.sub("_", job_name).strip("._") or "job"
    when = time.strftime("%Y%m%d-%H%M%S", time.localtime(stamp if stamp is not None else None))
    return f"{safe[:48]}-{when}-{token or os.urandom(2).hex()}"


def jobs_root(
    explicit: str | None, site_name: str | None = None, site_jobs_dir: str | None = None
) -> Path:
    """--jobs-dir, else $SNRUN_JOBS_DIR, else the site's jobs_dir, else ~/.snrun/jobs."""
    if explicit:
        return Path(explicit).absolute()
    settings = SnrunSettings.from_environ()
    if settings.jobs_dir:
        return expand_path(settings.jobs_dir)
    if site_jobs_dir:
        return expand_path(site_jobs_dir)
    if site_name or settings.site:
        from slurm_supernode.site.loader import load_site

        return expand_path(load_site(site_name).paths.jobs_dir)
    return expand_path("~/.snrun/jobs")


def link_job_id(jobs_root: Path, job_dir: Path, job_id: int | str) -> None:
    """``by-id/<job id>`` -> job dir (replaced atomically if it exists); ``ARRAY_TASK`` too."""
    by_id = jobs_root / "by-id"
    by_id.mkdir(parents=True, exist_ok=True)
    tmp = by_id / f".{job_id}.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(os.path.relpath(job_dir, by_id))
    os.replace(tmp, by_id / str(job_id))


def own_job_dirs(jobs_root: Path, marker: str = "plan.json") -> list[Path]:
    """The current user's job directories under ``jobs_root``, most recently active first
    (the newest of the directory and its ledger); a shared jobs dir holds others' too.
    ``marker``: the file that makes a directory one (``sweep.json``: the sweeps)."""
    return own_dirs(jobs_root, (marker,))


def own_dirs(jobs_root: Path, markers: tuple[str, ...]) -> list[Path]:
    """``own_job_dirs`` for directories with any of ``markers`` (chains and sweeps together,
    most recently active first: `snrun status -n N`)."""
    uid = os.getuid()

    def active(d: Path) -> float:
        times = [d.stat().st_mtime]
        ledger = d / "ledger.jsonl"
        if ledger.exists():
            times.append(ledger.stat().st_mtime)
        return max(times)

    try:
        entries = list(jobs_root.iterdir())
    except OSError:
        return []
    found = []
    for d in entries:
        try:
            marked = any((d / marker).is_file() for marker in markers)
            if d.name != "by-id" and marked and d.stat().st_uid == uid:
                found.append((active(d), d))
        except OSError:
            continue  # removed while we looked, or unreadable: not the user's
    return [d for _, d in sorted(found, reverse=True)]


def find_job_dir(jobs_root: Path, job: str) -> Path:
    """A job dir (or a sweep's directory) by job id (``by-id`` link) or by path."""
    direct = Path(job)
    if direct.is_dir() and any((direct / f).exists() for f in ("plan.json", "sweep.json")):
        return direct.resolve()
    link = jobs_root / "by-id" / job
    if link.exists():
        return link.resolve()
    raise InputError(
        f"no snrun job {job!r} under {jobs_root}",
        where="JOB",
        hint="give the job id printed by snrun or the job directory",
    )
