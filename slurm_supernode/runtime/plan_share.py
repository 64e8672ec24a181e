"""The planner's communication share for the layout a job runs, held beside the measured one.

``snrun plan`` prices a step from a model's shape (``placement/cost``); a running job's own
compute time per step (measured by its profiler window) stands in for the planner's derived
one, so the two shares differ by communication only. The model comes from
``$SNRUN_PLAN_MODEL`` (a preset name, as ``snrun plan --model``): without it the plan has no
bytes to count and ``plan_share`` stays None. Link speeds are the site's; where the site was
re-measured (``snrun bench``), its newest figures belong in the site's ``links:`` (docs/bench.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

MODEL_ENV = "SNRUN_PLAN_MODEL"


def plan_share(
    job_dir: Path, hosts: list[str], environ: Mapping[str, str], compute_per_step: float
) -> tuple[float | None, str | None]:
    """(the planned share, None) or (None, why not)."""
    name = environ.get(MODEL_ENV)
    if not name:
        return None, f"no model named (${MODEL_ENV}): the plan cannot count bytes"
    try:
        from slurm_supernode.launch.inputs import load_inputs, rank_map_for_job
        from slurm_supernode.placement.cost import Workload, levels_of, step_cost
        from slurm_supernode.placement.llm_presets import model_spec
        from slurm_supernode.site.loader import load_site

        inputs = load_inputs(job_dir)
        site = load_site(inputs.site_file)
        rank_map = rank_map_for_job(inputs, site, hosts)
        work = Workload(model_spec(name), compute_time_s=max(compute_per_step, 0.0))
        cost = step_cost(site, rank_map.layout, levels_of(rank_map, site=site), work)
    except Exception as exc:  # the measurement stands without the plan
        return None, f"no plan: {type(exc).__name__}: {exc}"
    return cost.comm_share, None
