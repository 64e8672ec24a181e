"""Recurring (nightly) bench jobs: next start times, the schedule registry, scrontab text.

Two ways to run a bench every night, chosen by what the Slurm has:

- ``scrontab``: one entry per schedule in the user's scrontab; at HH:MM Slurm runs
  ``snrun bench schedule --resubmit NAME`` as a small job, which submits the bench job of the
  stored spec itself (a scron entry cannot ask for whole super nodes).
- ``chain`` (no scrontab: Debian 12's Slurm 22.05 has no client, and 24.11+ turns scrontab off
  unless slurm.conf has ``ScronParameters=enable``): a bench job with ``--begin`` at the
  next HH:MM whose script first submits its successor for the night after, then measures, so
  a failing bench never ends the schedule. Its jobs are named ``snrun-bench-nightly-NAME``.

The registry (``<state_dir>/bench-schedules.json``) remembers every schedule so that
``--list`` and ``--remove`` work in both modes and each run finds its bench again: a typed,
versioned spec (``bench/stored_spec.py``), never argv to re-parse; old argv entries are
migrated on read. It is changed under a file lock and rewritten atomically. Everything here
except the registry's file access is pure.
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

from filelock import FileLock

from slurm_supernode.bench.stored_spec import (
    SpecError,
    spec_from_argv,
    spec_from_dict,
    spec_to_dict,
)
from slurm_supernode.bench.submit import BenchJob
from slurm_supernode.errors import InputError
from slurm_supernode.fsutil import expand_path, write_atomic

JOB_PREFIX = "snrun-bench-nightly"
REGISTRY_NAME = "bench-schedules.json"
REGISTRY_VERSION = 2  # 2: each schedule holds a typed spec (1: the options as argv)
MODES = ("auto", "scrontab", "chain")
_HHMM = re.compile(r"^(\d{1,2}):(\d{2})$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_BEGIN_FORMAT = "%Y-%m-%dT%H:%M:%S"


def choose_mode(requested: str, has_scrontab: bool, why_not: str | None) -> tuple[str, str | None]:
    """(mode, notice): ``auto`` takes scrontab where the cluster allows it, else the job chain
    (saying why); an explicit ``scrontab`` the cluster refuses is an error with the reason."""
    if requested not in MODES:
        raise InputError(
            f"unknown mode {requested!r}", where="--mode", hint="one of " + ", ".join(MODES)
        )
    if requested == "chain" or (requested == "scrontab" and has_scrontab):
        return requested, None
    if requested == "scrontab":
        raise InputError(
            f"cannot use scrontab: {why_not or 'not available'}",
            where="--mode scrontab",
            hint="use --mode chain (a job that resubmits itself), or ask the admin for"
            " ScronParameters=enable",
        )
    if has_scrontab:
        return "scrontab", None
    return "chain", f"{why_not or 'no scrontab'}: using a self-resubmitting job instead"


@dataclass(frozen=True)
class Schedule:
    """One recurring bench: when, how, and the bench run (``spec``) each night submits."""

    id: str
    name: str
    at: str  # "HH:MM", local time of the Slurm controller
    mode: str  # "scrontab" or "chain"
    site: str  # the --site argument (name or absolute path) the jobs are planned with
    spec: BenchJob | None = None  # None: an old (argv) entry this version cannot read
    workdir: str = ""
    created: float = 0.0
    job_ids: tuple[int, ...] = field(default=())  # chain: jobs submitted so far (last = next)
    old_args: tuple[str, ...] = ()  # the argv of an unreadable old entry, kept as stored
    unreadable: str = field(default="", compare=False)  # why spec is None

    @property
    def job_name(self) -> str:
        return f"{JOB_PREFIX}-{self.name}"


def parse_hhmm(text: str, where: str = "--nightly") -> tuple[int, int]:
    """``"02:30"`` -> (2, 30); anything else is an InputError."""
    m = _HHMM.match(text.strip())
    if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise InputError(f"bad time of day {text!r}", where=where, hint="use HH:MM, e.g. 02:30")
    return int(m.group(1)), int(m.group(2))


def next_run(now: datetime, hour: int, minute: int) -> datetime:
    """The first HH:MM strictly after ``now`` (today if still ahead, else tomorrow).

    Naive local wall-clock time, as Slurm reads ``--begin``: adding a day keeps HH:MM across
    daylight-saving changes.
    """
    candidate = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if candidate <= now:
        candidate += timedelta(days=1)
    return candidate


def begin_arg(when: datetime) -> str:
    """sbatch's ``--begin`` value for a local time."""
    return f"--begin={when.strftime(_BEGIN_FORMAT)}"


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise InputError(
            f"bad schedule name {name!r}",
            where="--name",
            hint="letters, digits, '.', '_' and '-', starting with a letter or digit",
        )
    return name


def new_schedule(
    name: str,
    at: str,
    mode: str,
    site: str,
    spec: BenchJob,
    workdir: str,
    now: float | None = None,
) -> Schedule:
    """A new schedule running ``spec`` (planned with ``site``) every night at ``at``."""
    parse_hhmm(at)
    return Schedule(
        id=secrets.token_hex(4),
        name=check_name(name),
        at=at,
        mode=mode,
        site=site,
        spec=replace(spec, site_arg=site),
        workdir=workdir,
        created=time.time() if now is None else now,
    )


def spec_of(entry: Schedule, registry: Path) -> BenchJob:
    """The bench run of a schedule; an old entry that could not be read is refused here
    (one line saying how to re-install), so --list and --remove still work on it."""
    if entry.spec is not None:
        return entry.spec
    raise InputError(
        f"schedule {entry.name!r} is stored in an old form this snrun cannot read"
        f" ({entry.unreadable})",
        where=str(registry),
        hint=f"re-install it: snrun bench schedule --remove {entry.name} --site {entry.site},"
        f" then snrun bench schedule --nightly {entry.at} --name {entry.name} --site"
        f" {entry.site} [options]",
    )


def find_schedule(entries: Sequence[Schedule], key: str) -> Schedule | None:
    """A schedule by name, or by id (a unique id prefix of 4+ characters will do)."""
    for entry in entries:
        if key in (entry.name, entry.id):
            return entry
    if len(key) >= 4:
        hits = [e for e in entries if e.id.startswith(key)]
        if len(hits) == 1:
            return hits[0]
    return None


def add_schedule(entries: Sequence[Schedule], entry: Schedule) -> list[Schedule]:
    if any(e.name == entry.name for e in entries):
        raise InputError(
            f"a schedule named {entry.name!r} exists already",
            where="--name",
            hint=f"pick another --name or remove it: snrun bench schedule --remove {entry.name}",
        )
    return [*entries, entry]


def remove_schedule(entries: Sequence[Schedule], key: str) -> tuple[list[Schedule], Schedule]:
    found = find_schedule(entries, key)
    if found is None:
        names = ", ".join(f"{e.name} ({e.id})" for e in entries) or "none"
        raise InputError(f"no bench schedule {key!r}", where="--remove", hint=f"schedules: {names}")
    return [e for e in entries if e is not found], found


def record_job(
    entries: Sequence[Schedule], name: str, job_id: int, keep: int = 5
) -> list[Schedule]:
    """Remember a chain's newly submitted job (the last ``keep`` ids are kept)."""
    return [
        replace(e, job_ids=(*e.job_ids, job_id)[-keep:]) if e.name == name else e for e in entries
    ]


# -- the registry file ----------------------------------------------------------------------
def registry_path(state_dir: str) -> Path:
    return expand_path(state_dir) / REGISTRY_NAME


def _from_dict(data: dict) -> Schedule:
    """One registry entry: the typed ``spec`` (version 1), or an old entry's argv
    (``submit_args``) migrated on read; one that cannot be migrated keeps its argv and says why."""
    site = str(data["site"])
    spec: BenchJob | None = None
    old_args: tuple[str, ...] = ()
    why = ""
    try:
        if "spec" in data:
            spec = spec_from_dict(data["spec"], site=site)
        else:
            old_args = tuple(str(a) for a in data.get("submit_args", ()))
            spec = spec_from_argv(old_args, site=site)
            old_args = ()
    except SpecError as exc:
        why = str(exc)
    return Schedule(
        id=str(data["id"]),
        name=str(data["name"]),
        at=str(data["at"]),
        mode=str(data["mode"]),
        site=site,
        spec=spec,
        workdir=str(data.get("workdir", "")),
        created=float(data.get("created", 0.0)),
        job_ids=tuple(int(j) for j in data.get("job_ids", ())),
        old_args=old_args,
        unreadable=why,
    )


def _to_dict(entry: Schedule) -> dict:
    data: dict = {"id": entry.id, "name": entry.name, "at": entry.at, "mode": entry.mode,
                  "site": entry.site}  # fmt: skip
    if entry.spec is not None:
        data["spec"] = spec_to_dict(entry.spec)
    else:
        data["submit_args"] = list(entry.old_args)
    data.update(workdir=entry.workdir, created=entry.created, job_ids=list(entry.job_ids))
    return data


def load_schedules(path: Path) -> list[Schedule]:
    """The registry's schedules ([] when the file does not exist yet)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise InputError(
            f"cannot read the schedule registry: {exc.strerror}", where=str(path)
        ) from None
    try:
        data = json.loads(text)
        version = data.get("version", 1)
        entries = [_from_dict(d) for d in data["schedules"]]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(
            f"the schedule registry is damaged: {exc}",
            where=str(path),
            hint="fix or delete the file (and remove the scrontab entries / jobs it named)",
        ) from None
    if not isinstance(version, int) or version > REGISTRY_VERSION:
        raise InputError(
            f"the schedule registry is version {version!r}, newer than this snrun's"
            f" ({REGISTRY_VERSION})",
            where=str(path),
            hint="use the snrun that installed the schedules",
        )
    return entries


def save_schedules(path: Path, entries: Sequence[Schedule]) -> None:
    data = {"version": REGISTRY_VERSION, "schedules": [_to_dict(e) for e in entries]}
    write_atomic(path, json.dumps(data, indent=1) + "\n")


def update_schedules(
    path: Path, change: Callable[[list[Schedule]], list[Schedule]]
) -> list[Schedule]:
    """Read, change and rewrite the registry under its lock; returns the new list."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=30):
        entries = change(load_schedules(path))
        save_schedules(path, entries)
    return entries


# -- scrontab text (pure) ---------------------------------------------------------------------
def _marker(name: str) -> str:
    return f"# {JOB_PREFIX} {name}"


def scron_block(entry: Schedule, command: Sequence[str], scron_options: Sequence[str] = ()) -> str:
    """The scrontab lines of one schedule, between markers that ``remove_scron`` finds."""
    hour, minute = parse_hhmm(entry.at)
    cmd = shlex.join(command)
    if entry.workdir:
        cmd = f"cd {shlex.quote(entry.workdir)} && {cmd}"
    lines = [
        f"{_marker(entry.name)} id={entry.id} (managed by 'snrun bench schedule'; do not edit)",
        f"#SCRON --job-name={entry.job_name}",
        *(f"#SCRON {opt}" for opt in scron_options),
        f"{minute} {hour} * * * {cmd}",
        f"{_marker(entry.name)} end",
    ]
    return "\n".join(lines) + "\n"


def scron_names(text: str) -> list[str]:
    """Names of the snrun schedules in a scrontab."""
    prefix = f"# {JOB_PREFIX} "
    names = []
    for line in text.splitlines():
        if line.startswith(prefix) and not line.endswith(" end"):
            names.append(line[len(prefix) :].split()[0])
    return names


def add_scron(text: str, block: str) -> str:
    body = text if not text or text.endswith("\n") else text + "\n"
    return body + block


def remove_scron(text: str, name: str) -> str:
    """The scrontab without the block of schedule ``name`` (other lines kept as they are)."""
    start, end = _marker(name) + " ", _marker(name) + " end"
    out, inside = [], False
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\n")
        if not inside and bare.startswith(start) and bare != end:
            inside = True
            continue
        if inside:
            if bare == end:
                inside = False
            continue
        out.append(line)
    return "".join(out)
