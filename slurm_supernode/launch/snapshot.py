"""What was submitted: checks that the program exists, and a snapshot of its code.

A job requeued tomorrow must run the code of today. At submission the script's directory (or
the working directory, for ``-m``) is copied into ``<job dir>/code/`` and every attempt runs
that copy: the script by its path in the copy, a module with the copy first on ``PYTHONPATH``.
Inside a git work tree only the files git knows (tracked, and untracked ones not ignored) are
copied, and the commit and the uncommitted diff are recorded; elsewhere the directory is copied
within a size limit. ``snapshot.json`` records which. ``--no-snapshot`` runs the live files.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterable, Mapping
from importlib.machinery import PathFinder
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from slurm_supernode.errors import InputError
from slurm_supernode.fsutil import write_atomic, write_json_atomic
from slurm_supernode.launch.inputs import FILE as INPUTS_FILE
from slurm_supernode.user_settings import SnrunSettings

if TYPE_CHECKING:
    import subprocess

CODE_DIR = "code"
DEFAULT_LIMIT_MB = 64
MAX_FILES = 20000
_SKIP_DIRS = {"__pycache__", ".git", ".hg", ".svn", ".venv", "venv", "node_modules", ".tox"}


class SnapshotPlan(NamedTuple):
    """Where the code comes from and where the job finds it (decided before anything is
    copied, so the rendered script already runs the copy)."""

    source: Path  # the directory copied
    dest: Path  # <job dir>/code
    module: bool

    def program(self, program: str, workdir: str) -> str:
        """The program as the job runs it: a script's path inside the copy; a module name is
        found through PYTHONPATH."""
        if self.module:
            return program
        script = Path(workdir, program).resolve()
        return str(self.dest / script.relative_to(self.source))


def check_program(program: str, module: bool, workdir: str, pythonpath: str = "") -> None:
    """Refuse, before anything is submitted, a working directory, script or module the job
    could not find (it would fail on every node, in every attempt)."""
    if not os.path.isdir(workdir):
        raise InputError(f"working directory {workdir!r} does not exist", where="-D/--chdir")
    if not module:
        path = Path(workdir, program)
        if not path.is_file():
            hint = "paths are taken against the job's working directory (-D, else here)"
            what = "is a directory" if path.is_dir() else "does not exist"
            raise InputError(f"script {program!r} {what} in {workdir}", where="SCRIPT", hint=hint)
        return
    search = [workdir, *[p for p in pythonpath.split(os.pathsep) if p], *sys.path[1:]]
    if not find_module(program, search):
        raise InputError(
            f"module {program!r} cannot be found from {workdir}",
            where="-m",
            hint="run snrun from the directory that holds the package, or set -D",
        )


def find_module(name: str, search: Iterable[str]) -> bool:
    """Whether ``name`` (dotted) can be imported from ``search``, without importing anything
    (an import could run the user's code on the login node)."""
    parts = name.split(".")
    if not all(p.isidentifier() for p in parts):
        return False
    path: list[str] | None = list(search)
    for i in range(len(parts)):
        spec = PathFinder.find_spec(".".join(parts[: i + 1]) if i else parts[0], path)
        if spec is None:
            return parts[0] in sys.builtin_module_names and i == 0 and len(parts) == 1
        if i < len(parts) - 1:
            path = list(spec.submodule_search_locations or [])
            if not path:
                return False
    return True


def plan_snapshot(
    program: str, module: bool, workdir: str, job_dir: Path, enabled: bool = True
) -> SnapshotPlan | None:
    """The snapshot of this job (pure)."""
    if not enabled or not program:
        return None
    source = Path(workdir).resolve() if module else Path(workdir, program).resolve().parent
    return SnapshotPlan(source=source, dest=job_dir / CODE_DIR, module=module)


def _git(source: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    import subprocess  # here: a plan that takes no snapshot runs no command

    try:
        proc = subprocess.run(
            ["git", "-C", str(source), *args], capture_output=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc if proc.returncode == 0 else None


def _walk(source: Path, skip: Iterable[Path]) -> list[str]:
    """Files under ``source`` (relative), without VCS folders, caches, ``skip``, and snrun job
    directories (those with a plan.json: a jobs dir that is the code folder itself would
    otherwise copy every earlier job, snapshots included, into the next)."""
    skipped = {p.resolve() for p in skip}
    out = []
    for root, dirs, files in os.walk(source):
        here = Path(root)
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in _SKIP_DIRS
            and not (here / d).is_symlink()
            and (here / d).resolve() not in skipped
            and not (here / d / INPUTS_FILE).is_file()
        )
        out += [str((here / f).relative_to(source)) for f in sorted(files)]
        if len(out) > MAX_FILES:
            break
    return out


def limit_bytes(environ: Mapping[str, str] | None = None) -> int:
    """The size limit of a snapshot: ``SNRUN_SNAPSHOT_MAX_MB`` (default 64 MB)."""
    raw = SnrunSettings.from_environ(environ).snapshot_max_mb or str(DEFAULT_LIMIT_MB)
    try:
        return int(float(raw) * 1024 * 1024)
    except ValueError:
        raise InputError(f"bad SNRUN_SNAPSHOT_MAX_MB {raw!r}", where="environment") from None


def collect_snapshot(
    plan: SnapshotPlan, limit: int, skip: Iterable[Path] = ()
) -> tuple[list[str], dict[str, Any], str]:
    """The files to copy, the record and the uncommitted diff; refuses (InputError) a snapshot
    over the limits. Reads only: called before the job directory exists."""
    record: dict[str, Any] = {"source": str(plan.source), "dir": str(plan.dest)}
    skipped = [Path(p).resolve() for p in [*skip, plan.dest.parent]]
    top = _git(plan.source, "rev-parse", "--show-toplevel")
    listed = _git(plan.source, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    diff_text = ""
    if top is not None and listed is not None:
        files = [f for f in listed.stdout.decode(errors="replace").split("\0") if f]
        head = _git(plan.source, "rev-parse", "HEAD")
        record["kind"] = "git"
        record["repo"] = top.stdout.decode().strip()
        record["commit"] = head.stdout.decode().strip() if head else None
        diff = _git(plan.source, "diff", "HEAD", "--binary") if head else None
        diff_text = diff.stdout.decode(errors="replace") if diff else ""
        record["dirty"] = bool(diff_text)
        untracked = _git(plan.source, "ls-files", "-z", "--others", "--exclude-standard")
        if untracked and untracked.stdout:
            record["untracked"] = [f for f in untracked.stdout.decode().split("\0") if f][:200]
        files = [
            f
            for f in files
            if not any((plan.source / f).resolve().is_relative_to(s) for s in skipped)
        ]
    else:
        record["kind"] = "copy"
        files = _walk(plan.source, skipped)
    if len(files) > MAX_FILES:
        raise InputError(
            f"code snapshot of {plan.source}: more than {MAX_FILES} files",
            where="SCRIPT",
            hint="keep the script in a smaller directory, or --no-snapshot",
        )
    total = sum((plan.source / f).stat().st_size for f in files if (plan.source / f).is_file())
    if total > limit:
        raise InputError(
            f"code snapshot of {plan.source} would be {total / 2**20:.1f} MB, over the limit "
            f"of {limit / 2**20:.0f} MB",
            where="SCRIPT",
            hint="raise SNRUN_SNAPSHOT_MAX_MB, move the data out of the code folder, "
            "or --no-snapshot",
        )
    record.update(files=len(files), bytes=total)
    return files, record, diff_text


def write_snapshot(
    plan: SnapshotPlan, files: list[str], record: dict[str, Any], diff_text: str
) -> dict[str, Any]:
    """Copy the files into ``<job dir>/code`` and write ``snapshot.json`` (and ``code.diff``)."""
    for rel in files:
        src, dst = plan.source / rel, plan.dest / rel
        if not src.is_file():
            continue  # deleted but still tracked: the diff records it
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    plan.dest.mkdir(parents=True, exist_ok=True)
    record = {**record, "time": time.time()}
    if diff_text:
        write_atomic(plan.dest.parent / "code.diff", diff_text)
        record["diff"] = str(plan.dest.parent / "code.diff")
    write_json_atomic(plan.dest.parent / "snapshot.json", record)
    return record
