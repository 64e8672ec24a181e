"""The job's one HCCL rank table, merged from every node's own hardware values at job start.

Each agent reads its node (``runtime.ascend``), writes a fragment into the job directory
(atomically), and waits until every node of the rank map has written one. Then every agent
merges the same fragments the same way (pure ``plan_rank_table``), so a bad value fails on every
node with the same one-line error before torchrun starts; node rank 0 writes the table
(atomically) and the others wait for it, so all ranks read one file. Fragments and table are
keyed by job id and attempt: a restart never reads the last attempt's values.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from slurm_supernode.errors import InputError, JobError
from slurm_supernode.fsutil import write_json_atomic
from slurm_supernode.placement.hccl import plan_rank_table
from slurm_supernode.placement.hccl_facts import NodeFacts
from slurm_supernode.placement.hccl_validate import check_rank_table
from slurm_supernode.placement.model import RankMap
from slurm_supernode.site.model import Site

DEFAULT_TIMEOUT = 180.0  # seconds for every node's fragment, then for node 0's table
TIMEOUT_ENV = "SNRUN_RANK_TABLE_TIMEOUT"

Reader = Callable[..., NodeFacts]


def fragment_dir(job_dir: Path, job_id: int, attempt: int) -> Path:
    return job_dir / "hccl" / f"{job_id}.{attempt}"


def table_path(job_dir: Path, job_id: int, attempt: int) -> Path:
    return job_dir / f"rank_table.{job_id}.{attempt}.json"


def _wait(pred: Callable[[], bool], timeout: float, poll: float) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if pred():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)


def prepare_rank_table(
    job_dir: Path,
    site: Site,
    rm: RankMap,
    hostname: str,
    *,
    job_id: int,
    attempt: int,
    environ: Mapping[str, str],
    read: Reader | None = None,
    timeout: float | None = None,
    poll: float = 0.2,
    version: str | None = None,
) -> tuple[Path, tuple[str, ...]]:
    """Write this node's fragment, merge all of them, return (table path, notes to print).
    ``version`` None: v1.2 when npu-smi gave SDIDs, else v1.0. Raises PlacementError where
    values are missing or disagree, JobError on a timeout."""
    if read is None:
        from slurm_supernode.runtime.ascend import read_node_facts

        read = read_node_facts
    if timeout is None:
        timeout = float(environ.get(TIMEOUT_ENV) or DEFAULT_TIMEOUT)
    me = rm.node(hostname)
    frags = fragment_dir(job_dir, job_id, attempt)
    facts = read(hostname, range(site.node(hostname).devices), environ=environ)
    write_json_atomic(frags / f"{hostname}.json", {"node_rank": me.node_rank, **facts.as_dict()})

    hosts = [n.hostname for n in rm.nodes]

    def missing() -> list[str]:
        return [h for h in hosts if not (frags / f"{h}.json").exists()]

    if not _wait(lambda: not missing(), timeout, poll):
        late = missing()
        raise JobError(
            f"rank table: no hardware values from {', '.join(late[:8])} after {timeout:g}s"
            f" ({len(hosts) - len(late)} of {len(hosts)} nodes wrote theirs to {frags})",
            hint=f"see those nodes' agent output; {TIMEOUT_ENV} sets the wait",
        )
    all_facts = {
        h: NodeFacts.from_dict(json.loads((frags / f"{h}.json").read_text())) for h in hosts
    }
    plan = plan_rank_table(site, rm, all_facts, version)
    assert plan.table is not None
    path = table_path(job_dir, job_id, attempt)
    check_rank_table(plan.table, str(path))
    if me.node_rank == 0:
        write_json_atomic(path, plan.table)
    elif not _wait(path.exists, timeout, poll):
        raise JobError(
            f"rank table: node rank 0 ({hosts[0]}) wrote no {path.name} within {timeout:g}s",
            hint=f"see {hosts[0]}'s agent output; {TIMEOUT_ENV} sets the wait",
        )
    elif json.loads(path.read_text()) != plan.table:
        raise JobError(f"rank table: {path} differs from this node's merge of the same values")
    return path, plan.notes


MODE_ENV = "SNRUN_RANK_TABLE"
MODES = ("auto", "1.0", "1.2", "off")


def rank_table_mode(environ: Mapping[str, str]) -> str:
    """``SNRUN_RANK_TABLE``: auto (default), 1.0 or 1.2 (forced), off (no table: torch_npu
    then negotiates by itself, as it does without RANK_TABLE_FILE)."""
    mode = (environ.get(MODE_ENV) or "auto").strip()
    if mode not in MODES:
        raise InputError(
            f"{mode!r} is not a rank table mode", where=MODE_ENV, hint="one of " + ", ".join(MODES)
        )
    return mode


def rank_table_env(path: Path) -> dict[str, str]:
    """Variables torch_npu/HCCL read a rank table from."""
    return {"RANK_TABLE_FILE": os.fspath(path)}
