"""The plan's communication share for the job's own layout and placement, with the window's
measured compute: the same figure `snrun plan` gives for that model and compute time."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from slurm_supernode.bench.model import BenchResult, BenchRun
from slurm_supernode.bench.store import open_store
from slurm_supernode.observe.bench_links import measured_links
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
    nobench = {"SNRUN_BENCH_DB": str(tmp_path / "none.sqlite")}
    share, note = plan_share(tmp_path, HOSTS, {"SNRUN_PLAN_MODEL": "llama-70b", **nobench}, 0.8)
    site = load_site(str(SITE))
    rank_map = build_rank_map(site, HOSTS, inputs.layout_obj(), None)
    work = Workload(model_spec("llama-70b"), compute_time_s=0.8)
    expected = step_cost(site, rank_map.layout, levels_of(rank_map, site=site), work).comm_share
    assert share == expected and 0 < share < 1
    assert note.startswith("model llama-70b; links: the site's nominal (no snrun bench results")


def test_no_model_no_plan(tmp_path):
    share, why = plan_share(tmp_path, HOSTS, {}, 0.8)
    assert share is None and "--plan-model" in why
    share, why = plan_share(tmp_path, HOSTS, {"SNRUN_PLAN_MODEL": "llama-70b"}, 0.8)
    assert share is None and why.startswith("no plan:")  # no plan.json: said, not raised


def _bench(db: Path, run_id: str, t: float, busbw: dict[str, float], *, site: str = "local"):
    with open_store(db) as store:
        store.add_run(
            BenchRun(
                run_id=run_id, time=t, site=site, supernode="sn0,sn1", nodes=8, world_size=8,
                backend="gloo", timing="wall",
                results=tuple(
                    BenchResult(scope=scope, collective="all_reduce", size=size, count=size // 4,
                                dtype="float32", group_size=4, groups=2, time_us=10.0,
                                algbw=bw * size / 2**30, busbw=bw * size / 2**30, wrong=0)
                    for scope, bw in busbw.items()
                    for size in (2**20, 2**30)  # the largest size's busbw counts: bw
                ),
            )
        )  # fmt: skip


def test_the_newest_bench_results_replace_nominal_links(tmp_path):
    layout = {"tp": 8, "cp": 1, "ep": 1, "dp": 8, "pp": 1, "order": "tp-cp-ep-dp-pp"}
    inputs = make_inputs(site_file=str(SITE), layout=layout, nodes=8, supernodes=2)
    (tmp_path / "plan.json").write_text(inputs.to_json())
    db = tmp_path / "bench.sqlite"
    _bench(db, "old", 1000.0, {"inter": 40.0, "node": 300.0})
    _bench(db, "new", 2000.0, {"inter": 5.0})  # newest: inter only
    _bench(db, "other-site", 3000.0, {"inter": 1.0, "node": 1.0}, site="elsewhere")
    env = {"SNRUN_PLAN_MODEL": "llama-70b", "SNRUN_BENCH_DB": str(db)}
    share, note = plan_share(tmp_path, HOSTS, env, 0.8)

    site = load_site(str(SITE))
    links = dict(site.links)
    links["inter"] = replace(links["inter"], bandwidth_GBps=5.0)
    links["node"] = replace(links["node"], bandwidth_GBps=300.0)
    measured = replace(site, links=links)
    rank_map = build_rank_map(measured, HOSTS, inputs.layout_obj(), None)
    work = Workload(model_spec("llama-70b"), compute_time_s=0.8)
    expected = step_cost(
        measured, rank_map.layout, levels_of(rank_map, site=measured), work
    ).comm_share
    assert share == expected
    nominal, _ = plan_share(
        tmp_path, HOSTS, {**env, "SNRUN_BENCH_DB": str(tmp_path / "none.sqlite")}, 0.8
    )
    assert nominal is not None and share > nominal  # slower measured links: more waiting
    assert "inter 5.0 GB/s (bench run new" in note and "node 300.0 GB/s (bench run old" in note
    assert note.endswith("; nominal supernode")


def test_an_unreadable_bench_database_keeps_the_nominal_links(tmp_path):
    site = load_site(str(SITE))
    db = tmp_path / "bench.sqlite"
    db.write_text("not a database")
    same, note = measured_links(site, {"SNRUN_BENCH_DB": str(db)})
    assert same is site and "nominal" in note
