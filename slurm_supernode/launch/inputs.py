"""The agent's inputs (the job directory's ``plan.json``) and the rank map they imply.

Shared by the agent, the supervisor, the dry-run preview and the example scripts; kept apart
from the agent so the dry run does not load what only a node inside the job needs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from slurm_supernode.errors import JobError
from slurm_supernode.placement.model import Layout, RankMap
from slurm_supernode.site.model import Site


def load_inputs(job_dir: Path) -> dict[str, Any]:
    try:
        return json.loads((job_dir / "plan.json").read_text())
    except (OSError, ValueError) as exc:
        raise JobError(f"cannot read the job plan: {exc}", where=str(job_dir)) from None


def rank_map_for_job(inputs: Mapping[str, Any], site: Site, hosts: list[str]) -> RankMap:
    from slurm_supernode.placement.rankmap import build_rank_map

    layout = Layout.from_dict(inputs["layout"])  # dp, edp are derived again from the hosts
    return build_rank_map(site, hosts, layout, inputs.get("nproc_per_node"))
