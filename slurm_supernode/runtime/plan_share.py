"""The planner's communication share for the layout a job runs, held beside the measured one.

``snrun plan`` prices a step from a model's shape (``placement/cost``); a running job's own
compute time per step (measured by its profiler window) stands in for the planner's derived
one, so the two shares differ by communication only. The model is the one the job was submitted
with (``snrun --plan-model PRESET``, which the job gets as ``$SNRUN_PLAN_MODEL``; ``--env`` may
set it too): without it the plan has no bytes to count and ``plan_share`` stays None, the note
says why. Link speeds are the site's newest ``snrun bench`` results where they exist, else the
site's nominal ``links:`` (``observe/bench_links``); the note says which. Called once per window.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from slurm_supernode.launch.observe_options import PLAN_MODEL_ENV

MODEL_ENV = PLAN_MODEL_ENV


def plan_share(
    job_dir: Path, hosts: list[str], environ: Mapping[str, str], compute_per_step: float
) -> tuple[float | None, str]:
    """(the planned share, what it was computed with) or (None, why not)."""
    name = environ.get(MODEL_ENV)
    if not name:
        return None, (
            "no model given at submit (snrun --plan-model PRESET, as snrun plan --model): "
            "the plan cannot count bytes"
        )
    try:
        from slurm_supernode.launch.inputs import load_inputs, rank_map_for_job
        from slurm_supernode.observe.bench_links import measured_links
        from slurm_supernode.placement.cost import Workload, levels_of, step_cost
        from slurm_supernode.placement.llm_presets import model_spec
        from slurm_supernode.site.loader import load_site

        inputs = load_inputs(job_dir)
        site, links = measured_links(load_site(inputs.site_file), environ)
        rank_map = rank_map_for_job(inputs, site, hosts)
        work = Workload(model_spec(name), compute_time_s=max(compute_per_step, 0.0))
        cost = step_cost(site, rank_map.layout, levels_of(rank_map, site=site), work)
    except Exception as exc:  # the measurement stands without the plan
        return None, f"no plan: {type(exc).__name__}: {exc}"
    return cost.comm_share, f"model {name}; {links}"
