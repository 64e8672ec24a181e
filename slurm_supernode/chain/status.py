"""The chain of attempts of one job, for `snrun status` (table or JSON)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from slurm_supernode.chain import ledger
from slurm_supernode.chain.slow_status import slow_lines, with_slow_marks
from slurm_supernode.forensics.report import attempt_evidence, evidence_lines
from slurm_supernode.forensics.torchrun_report import describe, earliest_first
from slurm_supernode.slurm.jobinfo import JobInfo

JobRecord = Callable[[int], "JobInfo | None"]  # a job id -> Slurm's record of it (None: unknown)


def _from_slurm(chain: ledger.Chain, record: JobRecord | None) -> dict[str, Any] | None:
    """No final record: does Slurm say the chain ended, or waits held, with no supervisor?
    Or does its job wait (``{"state": "PENDING", "reason": words, "never_starts": ...}``)?"""
    from slurm_supernode.chain.lost import verdict_without_supervisor
    from slurm_supernode.errors import SlurmError
    from slurm_supernode.slurm.job_lookup import job_info

    lookup = record or job_info
    try:
        info = lookup(chain.job_ids[-1])
    except SlurmError:
        return None  # Slurm not reachable: the ledger's view alone
    verdict = verdict_without_supervisor(chain, info)
    if verdict is not None or info is None:
        return verdict
    return pending_view(chain, info)


def chain_summary(job_dir: Path, record: JobRecord | None = None) -> dict[str, Any]:
    """Attempts, job ids and final state of the chain in ``job_dir``; without a final record,
    Slurm's record of the last job says whether the chain ended with nobody to record it.
    ``record``: where that record comes from (default: one query for this job; a watcher's
    ``record`` serves many chains from one query)."""
    chain = ledger.fold(ledger.read(job_dir))
    submitted = job_dir / "job.json"
    if submitted.exists():
        for jid in json.loads(submitted.read_text()).get("job_ids", []):
            if jid not in chain.job_ids:
                chain.job_ids.insert(0, jid)
    final = chain.final or (_from_slurm(chain, record) if chain.job_ids else None)
    state = final["state"] if final else ("RUNNING" if chain.attempts else "PENDING")
    return {
        "job_dir": str(job_dir),
        "job_ids": chain.job_ids,
        "state": state,
        "reason": final.get("reason") if final else None,
        "never_starts": bool(final and final.get("never_starts")),
        "attempts": [
            with_slow_marks(job_dir, _with_first(attempt_evidence(job_dir, asdict(a))))
            for a in chain.attempts
        ],
    }


def _with_first(attempt: dict[str, Any]) -> dict[str, Any]:
    """Only the rank the cause line names is marked first (torchrun marks one per node)."""
    if attempt.get("ranks"):
        cause = (attempt.get("error") or {}).get("rank")
        attempt["ranks"] = earliest_first(attempt["ranks"], cause)
    return attempt


def format_chain(summary: dict[str, Any]) -> str:
    """A plain table, one line per attempt."""
    lines = [
        f"job dir : {summary['job_dir']}",
        f"job ids : {', '.join(map(str, summary['job_ids'])) or '-'}",
        f"state   : {summary['state']}"
        + (f" ({summary['reason']})" if summary.get("reason") else ""),
        "",
        f"{'#':>3} {'job':>7} {'started':<19} {'secs':>6} {'exit':>4} "
        f"{'cause':<13} {'action':<9} detail",
    ]
    for a in summary["attempts"]:
        start = a["start"] and time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(a["start"]))
        secs = f"{a['end'] - a['start']:.1f}" if a["start"] and a["end"] else "-"
        code = "-" if a["exit_code"] is None else str(a["exit_code"])
        detail = a["detail"] or ""
        if a.get("ranks"):
            detail += f" [{describe(a['ranks'])}]"
        lines.append(
            f"{a['attempt']:>3} {a['job_id'] or '-':>7} {start or '-':<19} {secs:>6} {code:>4} "
            f"{a['cause'] or '(running)':<13} {a['action'] or '-':<9} {detail}"
        )
        lines += evidence_lines(a) + slow_lines(a)
    return "\n".join(lines)


def to_json(summary: dict[str, Any]) -> str:
    return json.dumps(summary, indent=2)


def recent_chains(job_dirs: list[Path], record: JobRecord | None = None) -> list[dict[str, Any]]:
    """One row per job chain: its job ids, state, attempts and directory. ``record``: Slurm's
    record of a job (default: one query for every chain listed that has no final record)."""
    if record is None:
        from slurm_supernode.slurm.job_lookup import records_of_many

        record = records_of_many()
    rows = []
    for d in job_dirs:
        summary = chain_summary(d, record)
        attempts = summary["attempts"]
        started = next((a["start"] for a in attempts if a.get("start")), None)
        rows.append(
            {
                "job_dir": summary["job_dir"],
                "job_ids": summary["job_ids"],
                "state": summary["state"],
                "reason": summary["reason"],
                "never_starts": summary["never_starts"],
                "attempts": len(attempts),
                "started": started,
            }
        )
    return rows


def format_recent(rows: list[dict[str, Any]], where: Path) -> str:
    """The user's recent chains as a table (``snrun status`` without a job)."""
    if not rows:
        return f"no snrun jobs of yours under {where}"
    lines = [f"{'job ids':<15} {'state':<10} {'tries':>5} {'started':<19} job dir"]
    for r in rows:
        ids = ",".join(map(str, r["job_ids"])) or "-"
        start = r["started"] and time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["started"]))
        never = f"  (can never start: {r['reason']})" if r.get("never_starts") else ""
        lines.append(
            f"{ids:<15} {r['state']:<10} {r['attempts']:>5} {start or '-':<19} {r['job_dir']}"
            + never
        )
    return "\n".join(lines)


def pending_view(chain: ledger.Chain, info: JobInfo) -> dict[str, Any] | None:
    """A chain whose job waits in the queue (none of its attempts runs): PENDING with Slurm's
    reason in words, and whether it can never start (slurm/reasons.py). None otherwise."""
    from slurm_supernode.slurm.reasons import pending_reason

    running = bool(chain.attempts) and chain.attempts[-1].end is None
    waits = pending_reason(info.reason) if info.pending and not running else None
    if waits is None:
        return None
    return {"state": "PENDING", "reason": str(waits), "never_starts": waits.never}
