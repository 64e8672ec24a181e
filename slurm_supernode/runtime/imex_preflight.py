"""The IMEX preflight of a tray, in the agent's step before rendezvous: does this tray have the
job's channel, is its IMEX domain UP, are its GPUs in one finished fabric clique, and does it
agree with the other trays of its super node (one channel per segment, one clique per NVLink
domain)? A tray that fails ends the attempt at once with cause ``imex`` (runtime/classify.py);
the job is requeued without it.

The trays compare through the job directory: each writes what it saw to
``logs/attempt<N>/imex/<host>.json`` and waits (at most ``PEER_WAIT_S``) for the other trays of
its super node. The value most trays hold wins (a tie: the first tray's in site order, so every
agent decides alike); a tray that holds another is the odd one out. Trays that do not report in
time are not waited for: their own preflight, or the rendezvous, speaks for them.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from slurm_supernode.fsutil import write_json_atomic
from slurm_supernode.runtime.imex_probe import TrayFacts, tray_facts
from slurm_supernode.site.imex import CHANNEL_DIR

PEER_WAIT_S = 30.0
# an all-zero ClusterUUID: the GPUs' own NVSwitch fabric (HGX), not a multi-node NVLink domain
ZERO_UUID = "00000000-0000-0000-0000-000000000000"
NO_CHANNEL = "no IMEX channel"  # how a tray without one says it (a job-wide lack is no node's)


def tray_problems(facts: TrayFacts) -> list[str]:
    """What is wrong with this tray on its own (empty: nothing)."""
    out = []
    if not facts.channels:
        where = "is missing" if facts.channels is None else "is empty"
        out.append(f"{NO_CHANNEL}: {CHANNEL_DIR} {where} in this step")
    if facts.domain_error:
        out.append(facts.domain_error)
    elif facts.domain_state is not None and facts.domain_state != "UP":
        out.append(f"IMEX domain state {facts.domain_state} (nvidia-imex-ctl -N), not UP")
    out += _fabric_problems(facts)
    return out


def _fabric_problems(facts: TrayFacts) -> list[str]:
    if facts.fabric is None:
        return []
    if not facts.fabric:
        return ["nvidia-smi -q shows no GPU with a Fabric section (no multi-node NVLink)"]
    unfinished = [g for g in facts.fabric if g.state != "Completed"]
    if unfinished:
        g = unfinished[0]
        return [f"GPU {g.bus_id} fabric state {g.state or 'unknown'}, not Completed"]
    cliques = {(g.cluster_uuid, g.clique_id) for g in facts.fabric}
    if len(cliques) > 1:
        return [f"this tray's GPUs are in {len(cliques)} fabric cliques: {_cliques(cliques)}"]
    uuid, _ = next(iter(cliques))
    if not uuid or uuid == ZERO_UUID:
        return [f"ClusterUUID {uuid or 'N/A'}: the GPUs are in no multi-node NVLink fabric"]
    return []


def _cliques(cliques: set[tuple[str, str]]) -> str:
    return ", ".join(f"{u}/{c}" for u, c in sorted(cliques))


def record(facts: TrayFacts) -> dict[str, Any]:
    """What a tray tells its peers: its channel(s) and its clique (None where not known)."""
    clique = None
    if facts.fabric:
        first = facts.fabric[0]
        clique = f"{first.cluster_uuid}/{first.clique_id}"
    return {"channels": list(facts.channels or ()), "clique": clique}


def peer_problems(
    host: str, order: Sequence[str], records: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """Does ``host`` agree with the other trays of its segment (``order``: its super node's
    trays in the job, site order; ``records``: those that reported, host included)?"""
    out = []
    for key, what in (("channels", "IMEX channel"), ("clique", "fabric clique")):
        values = {h: _key(records[h].get(key)) for h in order if h in records}
        values = {h: v for h, v in values.items() if v}
        if host not in values or len(set(values.values())) < 2:
            continue
        counts = Counter(values.values())
        top = max(counts.values())
        common = next(v for h, v in values.items() if counts[v] == top)  # ties: site order
        if values[host] != common:
            others = sum(1 for v in values.values() if v == common)
            out.append(
                f"{what} {values[host]} differs from {common} of {others} other tray(s) of"
                " its super node"
            )
    return out


def _key(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(f"channel{c}" for c in value)
    return str(value) if value else ""


def exchange_dir(job_dir: Path, attempt: int) -> Path:
    return job_dir / "logs" / f"attempt{attempt}" / "imex"


def run_preflight(
    job_dir: Path,
    attempt: int,
    host: str,
    segment: Sequence[str],
    facts: TrayFacts | None = None,
    wait_s: float = PEER_WAIT_S,
) -> tuple[list[str], dict[str, Any]]:
    """(problems of this tray, what it saw): its own checks, then the comparison with the
    trays of ``segment`` (this tray's super node in the job, site order)."""
    facts = tray_facts() if facts is None else facts
    mine = record(facts)
    problems = tray_problems(facts)
    where = exchange_dir(job_dir, attempt)
    write_json_atomic(where / f"{host}.json", mine | {"problems": problems})
    if problems:
        return problems, mine
    records = _gather(where, segment, wait_s)
    return peer_problems(host, segment, records), mine


def _gather(where: Path, hosts: Sequence[str], wait_s: float) -> dict[str, dict[str, Any]]:
    """The records of ``hosts`` written so far, waiting up to ``wait_s`` for the missing."""
    deadline = time.monotonic() + wait_s
    found: dict[str, dict[str, Any]] = {}
    while True:
        for h in hosts:
            if h not in found:
                try:
                    found[h] = json.loads((where / f"{h}.json").read_text())
                except (OSError, ValueError):
                    continue
        if len(found) == len(hosts) or time.monotonic() >= deadline:
            return found
        time.sleep(0.2)
