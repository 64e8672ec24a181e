"""A sweep as one table for `snrun status <sweep>`: task, parameters, state, attempts, cause.
Each task's row folds its own chain (chain/status.py), so restarts, requeues and
resubmissions of a task show as they do for any job."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from slurm_supernode.chain.status import JobRecord, chain_summary
from slurm_supernode.launch.array_plan import SWEEP_FILE
from slurm_supernode.slurm.reasons import PendingReason

ACTIVE = ("RUNNING", "PENDING")  # any other state: the task's chain has ended (or waits held)


def is_sweep(path: Path) -> bool:
    return (path / SWEEP_FILE).is_file()


def task_dirs(sweep_dir: Path) -> list[Path]:
    """Every task's job directory, in task order."""
    data = json.loads((sweep_dir / SWEEP_FILE).read_text())
    return [Path(task["job_dir"]) for task in data["tasks"]]


def sweep_summary(sweep_dir: Path, record: JobRecord | None = None) -> dict[str, Any]:
    """The sweep's tasks, each with its chain's state, attempts and causes. ``record``: Slurm's
    record of a task's job (a watcher's, so that one query serves every task; default: one
    query for the whole sweep)."""
    data = json.loads((sweep_dir / SWEEP_FILE).read_text())
    if record is None:
        from slurm_supernode.slurm.job_lookup import records_of_many

        record = records_of_many()
    queued: list[PendingReason | None] = []  # asked once, when a task has not started
    rows = []
    for task in data["tasks"]:
        chain = chain_summary(Path(task["job_dir"]), record)
        if chain["state"] == "PENDING" and not chain["job_ids"]:
            # not started: it waits in the array's own pending record, for its reason
            if not queued:
                queued.append(array_waits(data.get("array_job_id"), record))
            if (waits := queued[0]) is not None:
                chain |= {"reason": str(waits), "never_starts": waits.never}
        attempts = chain["attempts"]
        causes = [a["cause"] for a in attempts if a.get("cause") and a["cause"] != "success"]
        rows.append(
            {
                "task": task["task"],
                "params": task["params"],
                "state": chain["state"],
                "attempts": len(attempts),
                "causes": list(dict.fromkeys(causes)),
                "reason": chain["reason"],
                "never_starts": chain["never_starts"],
                "job_ids": chain["job_ids"],
                "job_dir": task["job_dir"],
            }
        )
    counts = Counter(r["state"] for r in rows)
    never = [r for r in rows if r["never_starts"] and r["state"] in ACTIVE]
    return {
        "sweep_dir": str(sweep_dir),
        "name": data.get("name"),
        "array_job_id": data.get("array_job_id"),
        "array": data.get("array"),
        "submitted": data.get("submitted"),
        "state": overall_state(counts, len(rows)),
        "counts": dict(counts),
        # a task that waits for what can never come: the sweep can never end as it stands
        "never_starts": bool(never),
        "never_start_tasks": [r["task"] for r in never],
        "reason": never[0]["reason"] if never else None,
        "tasks": rows,
    }


def array_waits(array_job_id: object, record: JobRecord) -> PendingReason | None:
    """Why the array's tasks that have not started wait (Slurm keeps them in one pending
    record under the array's own job id until each starts): Slurm's reason in words, and
    whether it can never start. None: nothing of the array waits, or Slurm is unreachable."""
    from slurm_supernode.errors import SlurmError
    from slurm_supernode.slurm.reasons import pending_reason

    if not isinstance(array_job_id, int) or array_job_id <= 0:
        return None
    try:
        info = record(array_job_id)
    except SlurmError:
        return None
    return pending_reason(info.reason) if info is not None and info.pending else None


def task_ranges(tasks: list[int]) -> str:
    """Task numbers as Slurm's --array writes them: ``0-2,5``."""
    spans: list[list[int]] = []
    for t in sorted(tasks):
        if spans and t == spans[-1][1] + 1:
            spans[-1][1] = t
        else:
            spans.append([t, t])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def recent_sweeps(sweep_dirs: list[Path], record: JobRecord | None = None) -> list[dict[str, Any]]:
    """One row per sweep, shaped like ``status.recent_chains``' rows (``snrun status``).
    ``record``: as for ``sweep_summary`` (default: one query for every sweep listed)."""
    if record is None:
        from slurm_supernode.slurm.job_lookup import records_of_many

        record = records_of_many()
    rows = []
    for d in sweep_dirs:
        summary = sweep_summary(d, record)
        array = summary["array_job_id"]
        rows.append(
            {
                "job_dir": summary["sweep_dir"],
                "job_ids": [f"{array}_[{summary['array']}]"] if array else [],
                "state": summary["state"],
                "attempts": sum(r["attempts"] for r in summary["tasks"]),
                "started": summary["submitted"],
                "reason": summary["reason"],
                "never_starts": summary["never_starts"],
            }
        )
    return rows


def overall_state(counts: Counter[str], total: int) -> str:
    """COMPLETED when every task completed; FAILED/CANCELLED once every task ended and one did
    not complete; RUNNING while any task runs; else PENDING."""
    ended = total - counts["RUNNING"] - counts["PENDING"]
    if ended == total and total:
        if counts["COMPLETED"] == total:
            return "COMPLETED"
        only_cancelled = counts["COMPLETED"] + counts["CANCELLED"] == total
        return "CANCELLED" if only_cancelled else "FAILED"
    return "RUNNING" if counts["RUNNING"] or ended else "PENDING"


def format_sweep(summary: dict[str, Any]) -> str:
    """A plain table, one line per task."""
    when = summary.get("submitted")
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when)) if when else "-"
    counts = ", ".join(f"{n} {s}" for s, n in sorted(summary["counts"].items()))
    lines = [
        f"sweep dir : {summary['sweep_dir']}",
        f"array job : {summary['array_job_id'] or '-'} (--array={summary['array']}), "
        f"submitted {stamp}",
        f"state     : {summary['state']} ({counts})",
        *(
            [f"never     : task {task_ranges(never)} can never start: {summary['reason']}"]
            if (never := summary.get("never_start_tasks"))
            else []
        ),
        "",
    ]
    rows = [
        (
            str(r["task"]),
            " ".join(f"{k}={v}" for k, v in r["params"].items()),
            r["state"],
            str(r["attempts"]),
            ",".join(r["causes"]) or "-",
            ",".join(map(str, r["job_ids"])) or "-",
            r["reason"]
            if r.get("never_starts") or r["state"] not in ("COMPLETED", "RUNNING", "PENDING")
            else "",
        )
        for r in summary["tasks"]
    ]
    head = ("task", "parameters", "state", "tries", "cause", "job ids", "reason")
    widths = [max(len(x[i]) for x in [head, *rows]) for i in range(len(head) - 1)]
    for row in [head, *rows]:
        cells = [
            c.rjust(w) if i == 3 else c.ljust(w)
            for i, (c, w) in enumerate(zip(row[:-1], widths, strict=True))
        ]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def all_ended(summary: dict[str, Any]) -> bool:
    """Every task's chain has ended (a task that waits held counts as ended)."""
    return all(r["state"] not in ACTIVE for r in summary["tasks"])


def cancel_sweep(sweep_dir: Path) -> list[int]:
    """Mark every task's chain that has not ended cancelled, then cancel the array and those
    tasks' own ids. A task that ended is left as it ended (ended is ended); with every task
    ended nothing is cancelled (returns no ids)."""
    from slurm_supernode.chain import ledger
    from slurm_supernode.slurm.jobs import cancel

    data = json.loads((sweep_dir / SWEEP_FILE).read_text())
    ids: list[int] = []
    marked = 0
    for task in data["tasks"]:
        job_dir = Path(task["job_dir"])
        if ledger.append_final(job_dir, state="CANCELLED", reason="snrun cancel (sweep)"):
            marked += 1
            ids += chain_summary(job_dir)["job_ids"]
    if not marked:
        return []
    if data.get("array_job_id"):
        ids.insert(0, int(data["array_job_id"]))
    for job_id in dict.fromkeys(ids):
        cancel(job_id)
    return list(dict.fromkeys(ids))


def ended_as(sweep_dir: Path) -> tuple[str, str] | None:
    """The state every task's chain ended in, as the sweep's (``overall_state``), and the
    tasks' counts in words; None while a task has no final record."""
    from slurm_supernode.chain import ledger

    data = json.loads((sweep_dir / SWEEP_FILE).read_text())
    finals = [ledger.fold(ledger.read(Path(t["job_dir"]))).final for t in data["tasks"]]
    if not finals or any(f is None for f in finals):
        return None
    counts = Counter(str(f.get("state")) for f in finals if f is not None)
    words = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    return overall_state(counts, len(finals)), f"every task had already ended: {words}"
