"""The plan's communication share for the job's own layout and placement, with the window's
measured compute: the same figure `snrun plan` gives for that model and compute time."""

from __future__ import annotations

from pathlib import Path

from slurm_supernode.placement.cost import Workload, levels_of, step_cost
from slurm_supernode.placement.llm_presets import model_spec
from slurm_supernode.placement.rankmap import build_rank_map
from slurm_supernode.runtime.plan_share import plan_share
from slurm_supernode.site.loader import load_site
from tests.runtime.inputs import make_inputs

SITE = Path(__file__).resolve().parents[2] / "site-configs" / "local.yaml"
HOSTS = [f"n{i}" for i in range(8)]


def test_plan_share_matches_the_planner(tmp_path):
    layout = {"tp": 8, "cp": 1, "ep": 1, "dp": 8, "pp": 1, "order": "tp-cp-ep-dp-pp"}
    inputs = make_inputs(site_file=str(SITE), layout=layout, nodes=8, supernodes=2)
    (tmp_path / "plan.json").write_text(inputs.to_json())
    share, why = plan_share(tmp_path, HOSTS, {"SNRUN_PLAN_MODEL": "llama-70b"}, 0.8)
    site = load_site(str(SITE))
    rank_map = build_rank_map(site, HOSTS, inputs.layout_obj(), None)
    work = Workload(model_spec("llama-70b"), compute_time_s=0.8)
    expected = step_cost(site, rank_map.layout, levels_of(rank_map, site=site), work).comm_share
    assert why is None and share == expected and 0 < share < 1


def test_no_model_no_plan(tmp_path):
    share, why = plan_share(tmp_path, HOSTS, {}, 0.8)
    assert share is None and "SNRUN_PLAN_MODEL" in why
    share, why = plan_share(tmp_path, HOSTS, {"SNRUN_PLAN_MODEL": "llama-70b"}, 0.8)
    assert share is None and why.startswith("no plan:")  # no plan.json: said, not raised
