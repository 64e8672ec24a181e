"""Golden plans: the full JSON of small plans, reviewed once and kept stable.

A change in rank order, device order or the schema shows up here as a diff. After an
intended change, regenerate with ``SNRUN_UPDATE_GOLDEN=1 python3 -m pytest tests/placement/
test_golden.py`` and review the diff before committing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from slurm_supernode.placement.cost import Workload, plan_cost
from slurm_supernode.placement.llm_presets import PRESETS
from slurm_supernode.placement.model import Layout
from slurm_supernode.placement.rankmap import build_rank_map, rank_map_to_json
from tests.placement.sites import ascend_site, default_links, make_site, nvl72_site, reversed_names

GOLDEN = Path(__file__).parent / "golden"


def _local():
    # Like site-configs/local.yaml but with hostnames that interleave the super nodes.
    site = make_site(
        2, 4, 8, groups=2, namer=reversed_names(2, 4), links=default_links(450, 200, 50, 2)
    )
    return site, "h[0-7]", Layout(tp=4, pp=2), None


def _local_partial_cost():
    site = make_site(
        2, 4, 8, groups=2, namer=reversed_names(2, 4), links=default_links(450, 200, 50, 2)
    )
    work = Workload(PRESETS["llama-70b"], global_batch=16, compute_time_s=3.0)
    return site, "h[1-4]", Layout(tp=16), work


def _nvl72():
    return nvl72_site(1), "n[00-17]", Layout(tp=8, pp=3, order="tp-cp-ep-pp-dp"), None


def _ascend():
    return ascend_site(1, 2), "n[1,0]", Layout(tp=8, ep=2), None


CASES = {
    "local-tp4-pp2": _local,
    "local-partial-tp16-cost": _local_partial_cost,
    "nvl72-tp8-pp3-dp-outer": _nvl72,
    "ascend-tp8-ep2": _ascend,
}


def plan_json(case: str) -> dict:
    site, hosts, layout, work = CASES[case]()
    rm = build_rank_map(site, hosts, layout)
    doc = rank_map_to_json(rm)
    if work is not None:
        base = build_rank_map(site, hosts, layout, physical=False)
        doc["cost"] = plan_cost(site, rm, work, base)
    return json.loads(json.dumps(doc))  # tuples -> lists, as read back from a file


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_plan(case):
    path = GOLDEN / f"{case}.json"
    got = plan_json(case)
    if os.environ.get("SNRUN_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(json.dumps(got, indent=1) + "\n")
    want = json.loads(path.read_text())
    assert got == want


def test_golden_local_reads_as_intended():
    """Spot-check the reviewed golden so a bad regeneration cannot slip through silently."""
    doc = json.loads((GOLDEN / "local-tp4-pp2.json").read_text())
    assert [n["hostname"] for n in doc["nodes"]] == ["h0", "h2", "h4", "h6", "h1", "h3", "h5", "h7"]
    assert doc["nodes"][0]["visible_devices"] == [0, 2, 4, 6, 1, 3, 5, 7]
    pp1 = [r for r in doc["ranks"] if r["coords"]["pp"] == 1]
    assert {r["supernode"] for r in pp1} == {"sn01"}  # PP stages = super nodes
    cost = json.loads((GOLDEN / "local-partial-tp16-cost.json").read_text())["cost"]
    assert cost["plan"]["dims"][0]["level"] == "supernode"
    assert cost["baseline"]["dims"][0]["level"] == "inter"
