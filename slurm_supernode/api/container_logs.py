"""The lines of a container that did not start, for ``snrun logs``: no rank ran, so there are
no rank logs; what the runtime (or the image's shell, or its python) said is in the agent's
``node_exit`` record (``output``: its last lines; ``error``: the one line ``snrun status``
shows). Shown as ``[NODE container] line``, before any rank's lines of the same attempt."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def container_records(job_dir: Path) -> dict[int, list[dict[str, Any]]]:
    """attempt -> the ``node_exit`` records of nodes whose container did not start (or was
    stopped before it did: another node failed first)."""
    from slurm_supernode.chain import ledger

    out: dict[int, list[dict[str, Any]]] = {}
    for rec in ledger.read(job_dir):
        unstarted = rec.get("container_unstarted") or rec.get("container_failed")
        if rec["event"] == "node_exit" and unstarted:
            attempt = rec.get("attempt")
            if isinstance(attempt, int):
                out.setdefault(attempt, []).append(rec)
    return out


def container_lines(
    job_dir: Path, attempt: int | None, node: str | None, known: list[int]
) -> tuple[int | None, list[str]]:
    """(the attempt shown, its container lines): ``attempt``, else the newest attempt that has
    rank logs or a container that did not start; ``node``: that node's only."""
    records = container_records(job_dir)
    newest = max([*known, *records], default=None)
    shown = attempt if attempt is not None else newest
    lines = []
    for rec in records.get(shown, []) if shown is not None else []:
        name = str(rec.get("node", "?"))
        if node and name != node:
            continue
        said = [str(x) for x in rec.get("output") or [] if isinstance(x, str)]
        if not rec.get("container_failed"):  # stopped first: another node failed
            why = rec.get("stopped") or "another node failed first"
            said = [f"stopped before its container started ({why})"]
        lines += [f"[{name} container] {line}" for line in said or [str(rec.get("error", ""))]]
    return shown, lines
