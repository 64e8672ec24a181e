"""Dependencies between job chains (``--after``, ``api.then``): the side effects.

A Slurm ``afterok`` on a chain's first job id is not enough: when the supervisor resubmits the
chain under a new id, the old job ends 0 and the dependent would start while the chain still
runs. So:

1. the dependent is submitted **held**, with ``--dependency=after<when>:<current id>``;
2. it is registered in the predecessor's directory (``dependents.jsonl``, under a file lock);
3. under the same lock, the predecessor's current id is read again and the dependency moved
   to it if the chain went on meanwhile; then the hold is released;
4. whenever the predecessor's supervisor resubmits (runtime/supervisor.py), it records the new
   id in its ledger first, then rewrites every registered dependent's dependency to the new id
   (``scontrol update JobId=<dep> Dependency=...``), before its own job ends.

Requeues keep the job id and need nothing. A chain that ends FAILED ends its last job
non-zero (an expedited one has its requeue turned off first), which is what Slurm's
``afterok``/``afternotok`` read. If the supervisor dies, the batch shell ends the chain FAILED
and the job exits non-zero: ``afterok`` dependents never start, ``afternotok`` ones do.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurm_supernode.chain import ledger
from slurm_supernode.errors import InputError, SlurmError
from slurm_supernode.fsutil import write_json_atomic
from slurm_supernode.launch.after import After, check_user_dependency, dependency
from slurm_supernode.launch.array_plan import SWEEP_FILE
from slurm_supernode.launch.jobdir import find_job_dir

DEPENDENTS = "dependents.jsonl"
AFTER_FILE = "after.json"  # in the dependent's directory: what it waits for


@dataclass(frozen=True)
class Predecessor:
    """A resolved ``--after``: an snrun chain or sweep (``job_dir``), or a plain Slurm job."""

    after: After
    job_dir: Path | None  # None: not an snrun job; a plain Slurm dependency
    is_sweep: bool = False

    def targets(self) -> list[str]:
        """The job ids the dependency names now: the chain's newest id (``ARRAY_TASK`` for a
        sweep task not started yet); for a sweep, its array and every task's resubmissions."""
        if self.job_dir is None:
            return [self.after.job]
        if self.is_sweep:
            return sweep_targets(self.job_dir)
        return [chain_target(self.job_dir)]

    def final_state(self) -> str | None:
        """How the chain (every task of a sweep) ended; None while it goes on."""
        if self.job_dir is None:
            return None
        if not self.is_sweep:
            final = ledger.fold(ledger.read(self.job_dir)).final
            return str(final["state"]) if final else None
        states = [
            (ledger.fold(ledger.read(d)).final or {}).get("state") for d in task_dirs(self.job_dir)
        ]
        if not states or None in states:
            return None
        return "COMPLETED" if set(states) == {"COMPLETED"} else "FAILED"


def task_dirs(sweep_dir: Path) -> list[Path]:
    data = json.loads((sweep_dir / SWEEP_FILE).read_text())
    return [Path(t["job_dir"]) for t in data["tasks"]]


def chain_target(job_dir: Path) -> str:
    """The chain's current job id; a sweep task that has not started: ``ARRAY_TASK``."""
    current = ledger.current_job_id(job_dir)
    if current is not None:
        return str(current)
    with contextlib.suppress(OSError, ValueError):
        array = json.loads((job_dir / "job.json").read_text()).get("array")
        if array:
            return str(array)
    raise InputError(f"job chain {job_dir} has no Slurm job id yet", where="--after")


def sweep_targets(sweep_dir: Path) -> list[str]:
    data = json.loads((sweep_dir / SWEEP_FILE).read_text())
    if not data.get("array_job_id"):
        raise InputError(f"sweep {sweep_dir} has no Slurm job id yet", where="--after")
    ids = [str(data["array_job_id"])]
    for d in task_dirs(sweep_dir):
        ids += [str(r["new_job_id"]) for r in ledger.read(d) if r["event"] == "resubmitted"]
    return ids


def resolve(after: After, jobs_root: Path) -> Predecessor:
    """The predecessor ``--after`` names: an snrun chain or sweep under ``jobs_root`` (by any
    job id, ``ARRAY_TASK``, or directory), else a plain Slurm job id."""
    try:
        job_dir = find_job_dir(jobs_root, after.job)
    except InputError:
        plain = after.job.replace("_", "", 1)
        if plain.isdigit():
            return Predecessor(after, None)  # a job snrun did not submit: Slurm alone
        raise
    is_sweep = (job_dir / SWEEP_FILE).is_file()
    if is_sweep and after.when == "notok":
        raise InputError(
            "a sweep ends 'notok' in too many ways to wait for",
            where="--after",
            hint="wait for one task (--after ARRAY_TASK:notok), or use :ok / :any",
        )
    return Predecessor(after, job_dir, is_sweep)


@dataclass(frozen=True)
class Prepared:
    """What the dependent is submitted with; ``hold``: registered and released afterwards."""

    predecessor: Predecessor
    dependency: str | None  # None: the chain already ended the wanted way
    hold: bool
    user_dependency: str | None


def prepare(pred: Predecessor, user_dependency: str | None) -> Prepared:
    """Before submission: the dependency to submit with. A chain that already ended the
    wanted way needs none; one that ended otherwise can never satisfy it (refused)."""
    check_user_dependency(user_dependency)
    state = pred.final_state()
    if state is not None:
        if not pred.after.satisfied_by(state):
            raise InputError(
                f"job chain {pred.after.job} ended {state}: "
                f"--after {pred.after.job}:{pred.after.when} can never be satisfied",
                where="--after",
                hint="submit without --after, or after another job",
            )
        return Prepared(pred, user_dependency, False, user_dependency)
    text = dependency(pred.after.when, pred.targets(), user_dependency)
    return Prepared(pred, text, pred.job_dir is not None, user_dependency)


def attach(prepared: Prepared, job_id: int, job_dir: Path, *, release: bool = True) -> None:
    """After submission (held): register the dependent, move its dependency to the chain's
    current id if it changed since, and release it."""
    from filelock import FileLock

    from slurm_supernode.slurm import jobs

    pred = prepared.predecessor
    write_json_atomic(
        job_dir / AFTER_FILE,
        {"job": pred.after.job, "when": pred.after.when, "job_dir": str(pred.job_dir or "")},
    )
    if pred.job_dir is None or prepared.dependency is None:
        return
    entry = {
        "job_id": job_id,
        "when": pred.after.when,
        "rest": prepared.user_dependency,
        "job_dir": str(job_dir),
    }
    path = pred.job_dir / DEPENDENTS
    with FileLock(str(path) + ".lock", timeout=60):
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, sort_keys=True) + "\n")
        now = dependency(pred.after.when, pred.targets(), prepared.user_dependency)
        if now != prepared.dependency:
            jobs.update_job(job_id, Dependency=now)
    if release:
        jobs.release_held(job_id)


def dependents(job_dir: Path) -> list[dict[str, Any]]:
    path = job_dir / DEPENDENTS
    out = []
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            with contextlib.suppress(ValueError):
                rec = json.loads(line)
                if isinstance(rec, dict) and isinstance(rec.get("job_id"), int):
                    out.append(rec)
    return out


def rewrite_dependents(job_dir: Path, sweep_dir: Path | None = None) -> list[str]:
    """The chain in ``job_dir`` goes on under a new job id (already in its ledger): point every
    dependent of it (and of its sweep) at the current ids. Returns one line per failure."""
    from filelock import FileLock

    from slurm_supernode.slurm import jobs

    failures = []
    for owner, is_sweep in ((job_dir, False), (sweep_dir, True)):
        if owner is None or not (owner / DEPENDENTS).exists():
            continue
        path = owner / DEPENDENTS
        with FileLock(str(path) + ".lock", timeout=60):
            targets = sweep_targets(owner) if is_sweep else [chain_target(owner)]
            for dep in dependents(owner):
                text = dependency(dep["when"], targets, dep.get("rest"))
                try:
                    jobs.update_job(dep["job_id"], Dependency=text)
                except SlurmError as exc:
                    failures.append(f"job {dep['job_id']}: {exc}")
    return failures


HOLD_OPTIONS = ("--hold", "-H")


def after_args(prepared: Prepared | None) -> tuple[str, ...]:
    """What this one sbatch call adds: the dependency, and a hold until it is registered."""
    if prepared is None:
        return ()
    args: tuple[str, ...] = ()
    if prepared.dependency:
        args += (f"--dependency={prepared.dependency}",)
    return args + (("--hold",) if prepared.hold else ())


def finish_after(
    prepared: Prepared, sbatch_args: tuple[str, ...], job_id: int, job_dir: Path
) -> None:
    """After sbatch: register with the predecessor, fix the id if it moved, release (unless
    the user asked for the hold too: ``sbatch_args`` are the job's own)."""
    user_held = any(a in HOLD_OPTIONS for a in sbatch_args)
    try:
        attach(prepared, job_id, job_dir, release=not user_held)
    except (SlurmError, OSError) as exc:
        raise SlurmError(
            f"job {job_id} was submitted held, but waiting for {prepared.predecessor.after.job}"
            f" could not be set up: {exc}",
            hint=f"'scancel {job_id}' and submit again, or 'scontrol release {job_id}'",
        ) from None


def prepare_after(after: After | str, jobs_root: Path, user_dependency: str | None) -> Prepared:
    """Resolve the predecessor and decide the dependency (before anything is written: a chain
    that ended the wrong way is refused here)."""
    from slurm_supernode.launch.after import parse_after

    wanted = parse_after(after) if isinstance(after, str) else after
    return prepare(resolve(wanted, jobs_root), user_dependency)
