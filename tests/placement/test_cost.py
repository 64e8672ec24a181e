"""Communication planner: the worked example of field-facts.md, byte counts, baseline, search."""

from __future__ import annotations

import pytest

from slurm_supernode.errors import InputError
from slurm_supernode.placement.cost import Workload, levels_of, plan_cost, step_cost
from slurm_supernode.placement.model import Layout
from slurm_supernode.placement.models import PRESETS, model_spec
from slurm_supernode.placement.rankmap import build_rank_map
from slurm_supernode.placement.recommend import candidate_layouts, recommend
from tests.placement.sites import default_links, make_site, reversed_names

# Links of the worked example: inter-node fabric 25 GB/s per device, the super node's fabric
# 125 GB/s (5x), no latency so the figures are exactly bytes / bandwidth.
LINKS = default_links(node=900, supernode=125, inter=25, latency_us=0)

# A model whose TP traffic is 12.5 GB per device and step and PP traffic 2.5 GB:
# one activation a = b x s x h x bytes = 1 x 10000 x 6250 x 2 = 125 MB; 20 layers on pp=4
# stages = 5 layers per stage; 10 micro-batches (global batch 10, dp=1).
#   TP = M x layers/pp x 2a = 10 x 5 x 2 x 125 MB = 12.5 GB -> 0.5 s at 25, 0.1 s at 125 GB/s
#   PP = M x 2a             = 10 x 2 x 125 MB     = 2.5 GB  -> 0.1 s at 25 GB/s
EXAMPLE_MODEL = model_spec(hidden=6250, layers=20, seq=10000, params=1e9)
EXAMPLE_WORK = Workload(EXAMPLE_MODEL, global_batch=10, compute_time_s=0.8)
LAYOUT = Layout(tp=8, pp=4)


def test_worked_example_without_super_node():
    site = make_site(8, 1, 4, links=LINKS)  # 8 nodes x 4 GPUs, every node its own domain
    rm = build_rank_map(site, "n[0-7]", LAYOUT)
    cost = step_cost(site, rm.layout, levels_of(rm), EXAMPLE_WORK)
    dims = {d.dim: d for d in cost.dims}
    assert rm.world_size == 32
    assert dims["tp"].level == "inter" and dims["tp"].time_s == pytest.approx(0.5)
    assert dims["pp"].level == "inter" and dims["pp"].time_s == pytest.approx(0.1)
    assert cost.comm_s == pytest.approx(0.6)
    assert cost.step_s == pytest.approx(1.4)
    assert round(100 * cost.comm_share) == 43


def test_worked_example_tp_inside_super_node():
    site = make_site(2, 4, 4, links=LINKS)  # same 32 GPUs, 2 super nodes of 4 nodes
    rm = build_rank_map(site, "n[0-7]", LAYOUT)
    cost = step_cost(site, rm.layout, levels_of(rm), EXAMPLE_WORK)
    dims = {d.dim: d for d in cost.dims}
    assert dims["tp"].level == "supernode" and dims["tp"].time_s == pytest.approx(0.1)
    assert dims["pp"].level == "inter" and dims["pp"].time_s == pytest.approx(0.1)
    assert cost.step_s == pytest.approx(1.0)


def test_field_facts_tp_volume():
    # b=8, s=8192, h=8192, fp16, 80 layers -> ~168 GB per step (2 x b x s x h x bytes x layers)
    model = model_spec(hidden=8192, layers=80, seq=8192, params=70e9, micro_batch=8)
    site = make_site(1, 1, 8, links=LINKS)
    rm = build_rank_map(site, "n0", Layout(tp=8))
    work = Workload(model, global_batch=8, compute_time_s=1.0)
    tp = next(d for d in step_cost(site, rm.layout, levels_of(rm), work).dims if d.dim == "tp")
    assert tp.bytes / 1e9 == pytest.approx(171.8, rel=0.01)  # 160 GiB ~ "168 GB"
    assert tp.level == "node"


def test_dp_gradient_bytes_and_latency():
    model = model_spec(hidden=1024, layers=8, seq=1024, params=8e9)
    links = default_links(node=100, supernode=100, inter=10, latency_us=10)
    site = make_site(4, 1, 8, links=links)
    rm = build_rank_map(site, "n[0-3]", Layout(tp=8))  # dp=4 across super nodes
    cost = step_cost(site, rm.layout, levels_of(rm), Workload(model, compute_time_s=1))
    dp = next(d for d in cost.dims if d.dim == "dp")
    grads = 8e9 / 8 * 2  # params / (tp x pp) x bytes
    assert dp.bytes == pytest.approx(grads * 2 * 3 / 4)  # ring all-reduce 2(n-1)/n
    assert dp.latency_s == pytest.approx(2 * 3 * 10e-6)
    assert dp.time_s == pytest.approx(dp.bytes / 10e9 + dp.latency_s)


def test_moe_all_to_all_only_with_experts():
    site = make_site(1, 2, 8, links=LINKS)
    rm = build_rank_map(site, "n[0-1]", Layout(tp=2, ep=4))
    levels = levels_of(rm)
    moe = Workload(PRESETS["mixtral-8x7b"], compute_time_s=1)
    dense = Workload(model_spec("mixtral-8x7b", experts=1, topk=1), compute_time_s=1)
    ep_moe = next(d for d in step_cost(site, rm.layout, levels, moe).dims if d.dim == "ep")
    ep_dense = next(d for d in step_cost(site, rm.layout, levels, dense).dims if d.dim == "ep")
    assert ep_moe.bytes > 0 and ep_moe.level == "node"
    assert ep_dense.bytes == 0 and ep_dense.time_s == 0


def test_topology_aware_beats_hostname_order():
    # Hostnames interleave super nodes: Slurm's order puts TP (16 > 8 per node) across them.
    site = make_site(2, 4, 8, groups=2, namer=reversed_names(2, 4), links=LINKS)
    work = Workload(EXAMPLE_MODEL, global_batch=8, compute_time_s=0.8)
    layout = Layout(tp=16, pp=4)
    rm = build_rank_map(site, "h[0-7]", layout)
    base = build_rank_map(site, "h[0-7]", layout, physical=False)
    cost = plan_cost(site, rm, work, base)
    plan_tp = next(d for d in cost["plan"]["dims"] if d["dim"] == "tp")
    base_tp = next(d for d in cost["baseline"]["dims"] if d["dim"] == "tp")
    assert plan_tp["level"] == "supernode" and base_tp["level"] == "inter"
    assert cost["speedup"] == pytest.approx(cost["baseline"]["step_s"] / cost["plan"]["step_s"])
    assert base_tp["time_s"] == pytest.approx(plan_tp["time_s"] * 125 / 25)  # same bytes
    assert cost["speedup"] > 1


def test_compute_from_tflops_adds_bubble():
    model = PRESETS["llama-70b"]
    site = make_site(2, 4, 8, links=LINKS)
    rm = build_rank_map(site, "n[0-7]", Layout(tp=8, pp=4))
    work = Workload(model, global_batch=32, tflops=1000, mfu=0.5)
    cost = step_cost(site, rm.layout, levels_of(rm), work)
    tokens = 32 * model.seq
    assert cost.compute_s == pytest.approx(6 * model.params * tokens / 64 / (1000e12 * 0.5))
    assert cost.micro_batches == 16  # 32 sequences over dp=2
    assert cost.bubble_s == pytest.approx(cost.compute_s * 3 / 16)


def test_workload_and_model_validation():
    with pytest.raises(InputError, match="compute time"):
        Workload(EXAMPLE_MODEL)
    with pytest.raises(InputError, match="mfu"):
        Workload(EXAMPLE_MODEL, tflops=100, mfu=1.5)
    with pytest.raises(InputError, match="unknown model preset"):
        model_spec("llama-7")
    with pytest.raises(InputError, match="--hidden"):
        model_spec(layers=2, seq=8, params=1e6)
    with pytest.raises(InputError, match="topk"):
        model_spec("llama-70b", topk=2)
    assert model_spec("llama-70b", seq=8192).seq == 8192


def test_candidates_respect_model_and_allocation():
    work = Workload(PRESETS["mixtral-8x7b"], compute_time_s=1)
    cands = candidate_layouts(64, 8, work)
    assert cands
    for lay in cands:
        assert lay.world_size == 64
        assert 32 % lay.pp == 0 and 8 % lay.ep == 0 and 4096 % lay.cp == 0
        assert (8 % lay.tp == 0) if lay.tp <= 8 else (lay.tp % 8 == 0)


def test_recommend_ranks_by_step_time():
    site = make_site(2, 4, 8, groups=2, links=default_links(450, 200, 25, 5))
    work = Workload(PRESETS["llama-70b"], tflops=989)
    recs = recommend(site, "n[0-7]", work, top=10)
    assert 1 <= len(recs) <= 10
    steps = [c.cost.step_s for c in recs]
    assert steps == sorted(steps)
    # the winner keeps its heaviest dimension (TP) off the slowest (inter) links
    assert recs[0].levels["tp"] in ("node", "supernode")
    capped = recommend(site, "n[0-7]", work, device_memory_gb=40)
    assert all(c.cost.memory_gb <= 40 for c in capped)
    with pytest.raises(InputError, match="no layout"):
        recommend(site, "n0", work, device_memory_gb=1)


# -- the framework's groups (issue 13) -----------------------------------------------------
def _dim(cost, name):
    return next(d for d in cost.dims if d.dim == name)


def test_dense_gradients_are_reduced_over_dp_times_cp():
    # 32 ranks, tp=8, cp=2: Megatron's dp is 2 and gradients travel in the dp x cp group of 4
    model = model_spec(hidden=1024, layers=8, seq=1024, params=8e9)
    site = make_site(2, 2, 8, links=LINKS)
    rm = build_rank_map(site, "n[0-3]", Layout(tp=8, cp=2))
    cost = step_cost(site, rm.layout, levels_of(rm), Workload(model, compute_time_s=1))
    dp = _dim(cost, "dp")
    assert rm.layout.dp == 2 and dp.size == 4
    assert dp.bytes == pytest.approx(8e9 / 8 * 2 * 2 * 3 / 4)
    assert dp.level == "inter"  # dp x cp spans both super nodes
    assert _dim(cost, "edp").bytes == 0  # a dense model has no expert gradients


def test_moe_prices_expert_gradients_over_edp_and_ep_over_the_real_ep_groups():
    # 2 super nodes x 2 nodes x 4 GPUs = 16 ranks, tp=2, ep=4: dp=8, edp=2.
    site = make_site(2, 2, 4, links=LINKS)
    model = PRESETS["mixtral-8x7b"]
    work = Workload(model, global_batch=16, compute_time_s=1)
    rm = build_rank_map(site, "n[0-3]", Layout(tp=2, ep=4))
    cost = step_cost(site, rm.layout, levels_of(rm), work)
    dense = model.params - (model.params - model.active_params) * 8 / 6
    expert = model.params - dense
    assert _dim(cost, "dp").bytes == pytest.approx(dense / 2 * 2 * 2 * 7 / 8)
    assert _dim(cost, "edp").bytes == pytest.approx(expert / 8 * 2 * 2 * 1 / 2)
    assert _dim(cost, "edp").level == "inter"  # edp neighbours are 8 ranks = 2 nodes apart
    # EP neighbours are etp=2 ranks apart: a group of 4 spans 8 ranks = 2 nodes of one SN ...
    assert _dim(cost, "ep").level == "supernode"
    # ... with etp=1 they are adjacent and stay on one node
    flat = build_rank_map(site, "n[0-3]", Layout(tp=2, ep=4, etp=1))
    assert _dim(step_cost(site, flat.layout, levels_of(flat), work), "ep").level == "node"
    assert cost.micro_batches == 2  # 16 sequences over Megatron's dp=8 (not dp/ep)
    state = (dense / 2 + expert / 8) * 16 / 1e9
    assert cost.memory_gb == pytest.approx(state)


def test_dp_is_not_hidden_by_ep():
    # snrun once said "dp=1: no communication" here while Megatron's DP group crossed domains
    site = make_site(4, 1, 8, links=LINKS)
    rm = build_rank_map(site, "n[0-3]", Layout(tp=8, ep=4))
    work = Workload(PRESETS["mixtral-8x7b"], compute_time_s=1)
    dp = _dim(step_cost(site, rm.layout, levels_of(rm), work), "dp")
    assert rm.layout.dp == 4 and dp.level == "inter" and dp.bytes > 0
