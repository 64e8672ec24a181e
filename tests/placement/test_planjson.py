"""The fast plan JSON writer parses to exactly the documented object (docs/plan-schema.md)."""

from __future__ import annotations

import io
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_supernode.placement.cost import Workload, plan_cost
from slurm_supernode.placement.llm_presets import PRESETS
from slurm_supernode.placement.model import Layout
from slurm_supernode.placement.planjson import write_plan_json
from slurm_supernode.placement.rankmap import build_rank_map, rank_map_to_json
from tests.placement.sites import make_site, reversed_names

SITE = make_site(3, 4, 8, groups=2, namer=reversed_names(3, 4))
HOSTS = [n.hostname for n in SITE.nodes]


def _written(rm, extra=None) -> str:
    buf = io.StringIO()
    write_plan_json(rm, buf, extra)
    return buf.getvalue()


@settings(max_examples=30, deadline=None)
@given(
    st.integers(1, len(HOSTS)),
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([1, 2]),
)
def test_parses_to_rank_map_to_json(k, tp, pp):
    hosts = HOSTS[:k]
    if (k * 8) % (tp * pp):
        pp = 1
    rm = build_rank_map(SITE, hosts, Layout(tp=tp, pp=pp))
    extra = {"site": "t", "recommendations": None}
    text = _written(rm, extra)
    doc = json.loads(text)
    assert doc == rank_map_to_json(rm) | extra
    assert list(doc) == list(rank_map_to_json(rm) | extra)  # key order too
    assert text.endswith("}\n")


def test_one_rank_per_line_and_cost_included():
    rm = build_rank_map(SITE, "h[00-07]", Layout(tp=8, pp=2))
    work = Workload(PRESETS["llama-70b"], compute_time_s=1.0)
    from dataclasses import replace

    rm = replace(rm, cost=plan_cost(SITE, rm, work))
    text = _written(rm)
    assert json.loads(text) == rank_map_to_json(rm)
    rank_lines = [ln for ln in text.splitlines() if ln.startswith('  {"rank": ')]
    assert len(rank_lines) == rm.world_size == 64
    node_lines = [ln for ln in text.splitlines() if ln.startswith('  {"hostname": ')]
    assert len(node_lines) == 8
