"""`snrun plan`: in-process with code-built sites, and as a subprocess (exit codes, no traceback).

Tests that need a site file use the YAML loader; they skip only while
``slurm_supernode.site.loader`` does not exist (it is written in parallel).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import slurm_supernode.cli.plan as plan_cli
from slurm_supernode.cli.main import main
from tests.placement.sites import ascend_site, default_links, make_site, reversed_names

ROOT = Path(__file__).resolve().parents[2]
HAS_LOADER = importlib.util.find_spec("slurm_supernode.site.loader") is not None
needs_loader = pytest.mark.skipif(not HAS_LOADER, reason="slurm_supernode.site.loader missing")

SITE = make_site(
    2, 4, 8, groups=2, namer=reversed_names(2, 4), links=default_links(450, 200, 50, 5)
)


@pytest.fixture
def site(monkeypatch):
    monkeypatch.setattr(plan_cli, "_load_site", lambda name: SITE)
    return SITE


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("SLURM_JOB_NODELIST", "SNRUN_SITE")}
    full_env = clean | {"PYTHONPATH": str(ROOT)} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "slurm_supernode", "plan", *args],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_table_output(site, capsys):
    assert main(["plan", "--site", "x", "--nodelist", "h[0-7]", "--tp", "8", "--pp", "2"]) == 0
    out = capsys.readouterr().out
    assert "Plan: 64 ranks = 8 nodes x 8 on 2 super nodes" in out
    assert "Layout (megatron, order tp-cp-ep-dp-pp, innermost first)" in out
    assert "dense tp=8 cp=1 dp=4 pp=2; expert etp=8 ep=1 edp=4 pp=2" in out
    lines = [line.split() for line in out.splitlines() if line.startswith(("0 ", "4 "))]
    assert lines[0][:3] == ["0", "h0", "sn00"] and lines[1][:3] == ["4", "h1", "sn01"]
    assert "ok    tp-in-node" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("dp ")}
    assert rows["dp"][1:4] == ["dense", "4", "0,8,16,24"]  # rank 0's DP group, 8 ranks apart


def test_large_maps_are_summarised(monkeypatch, capsys):
    big = make_site(4, 18, 4)
    monkeypatch.setattr(plan_cli, "_load_site", lambda name: big)
    assert main(["plan", "--site", "x", "--nodelist", "n[00-71]", "--tp", "4"]) == 0
    out = capsys.readouterr().out
    assert "... 60 more nodes ..." in out
    assert len(out.splitlines()) < 60


def test_json_output_with_cost_and_recommendations(site, capsys):
    args = ["plan", "--site", "x", "--nodelist", "h[0-7]", "--tp", "8", "--json"]
    args += ["--model", "llama-70b", "--tflops", "989", "--recommend", "--top", "3"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["world_size"] == 64 and doc["site"] == "test"
    assert doc["layout"]["dp"] == 8
    assert len(doc["ranks"]) == 64 and len(doc["nodes"]) == 8
    assert doc["cost"]["plan"]["step_s"] > 0
    assert doc["cost"]["baseline"]["name"] == "slurm hostname order"
    assert len(doc["recommendations"]) == 3
    assert [r["rank"] for r in doc["recommendations"]] == [1, 2, 3]


def test_minimum_per_dimension_in_text_and_json(monkeypatch, capsys):
    # the example: 3 super nodes x 4 nodes x 8 GPUs, --tp 8 --pp 4
    three = make_site(3, 4, 8)
    monkeypatch.setattr(plan_cli, "_load_site", lambda name: three)
    args = ["plan", "--site", "x", "--nodelist", "n[00-11]", "--tp", "8", "--pp", "4"]
    assert main(args) == 0
    out = capsys.readouterr().out
    header = next(line.split() for line in out.splitlines() if line.startswith("DIM "))
    want = ["DIM", "GRID", "SIZE", "FIRST", "GROUP", "GROUPS", "X-NODE", "X-SN", "MIN-X-SN", "SPAN"]
    assert header == want
    rows = {
        line.split()[0]: line.split() for line in out.splitlines() if line[:3] in ("dp ", "pp ")
    }
    assert rows["dp"][4:8] == ["32", "32", "8", "8"]  # groups, x-node, x-sn, minimum
    assert rows["pp"][4:8] == ["24", "24", "24", "24"]
    assert "minimum: lower bound reached (tp, etp, dp, edp, pp)" in out
    assert "placement: at the minimum in every dimension" in out
    assert main([*args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["groups"]["dp"]["crossings"] == {
        "node": 32,
        "supernode": 8,
        "supernode_min": 8,
        "supernode_min_by": "lower bound reached",
    }
    assert doc["groups"]["pp"]["crossings"]["supernode_min"] == 24


def test_env_defaults(site, monkeypatch, capsys):
    monkeypatch.setenv("SLURM_JOB_NODELIST", "h[0-3]")
    monkeypatch.setenv("SNRUN_SITE", "x")
    assert main(["plan", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["world_size"] == 32


def test_writes_rank_table_and_topo(monkeypatch, tmp_path, capsys):
    asc = ascend_site(1, 2)
    monkeypatch.setattr(plan_cli, "_load_site", lambda name: asc)
    table = tmp_path / "rt.json"
    argv = ["plan", "--site", "a", "--nodelist", "n[0-1]", "--tp", "8"]
    # v1.2 needs the SDIDs npu-smi reports on each node: written at job start, never made up
    assert main([*argv, "--hccl-rank-table", str(table), "--rank-table-version", "1.2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs the SDID npu-smi reports" in err[0] and not table.exists()
    assert main([*argv, "--hccl-rank-table", str(table), "--rank-table-version", "1.0"]) == 0
    assert json.loads(table.read_text())["version"] == "1.0"
    topo = tmp_path / "topo.xml"
    assert main([*argv, "--nccl-topo-file", str(topo)]) == 0
    assert topo.read_text().startswith("<system")
    assert "wrote HCCL rank table" in capsys.readouterr().err


def test_infeasible_layout_is_one_line_error(site, capsys):
    assert main(["plan", "--site", "x", "--nodelist", "h[0-7]", "--tp", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("snrun plan: error: layout: tp=3 does not divide 8 devices per node")
    assert "nearest feasible" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "no nodelist given"),
        (["--nodelist", "n0", "--tp", "0"], "--tp: must be >= 1, got 0"),
        (["--nodelist", "n0", "--model", "nope", "--compute-time", "1"], "unknown model preset"),
        (["--nodelist", "n0", "--recommend"], "needs a model"),
        (["--nodelist", "n0", "--model", "llama-70b"], "compute time"),
        (["--nodelist", "n0"], "no site given"),
    ],
)
def test_bad_input_exits_2_without_traceback(args, message):
    proc = run_cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_plan_does_not_import_torch():
    code = (
        "import sys; import slurm_supernode.cli.plan, slurm_supernode.placement.rankmap,"
        "slurm_supernode.placement.cost, slurm_supernode.placement.recommend,"
        "slurm_supernode.placement.hccl; assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, capture_output=True)


# -- with the YAML loader ------------------------------------------------------------------
SITE_YAML = """\
name: plantest
vendor: nvidia
supernodes:
  - name: sn0
    nodes: n[0-3]
  - name: sn1
    nodes: n[4-7]
node_defaults:
  devices: 8
  device_groups: [[0, 1, 2, 3], [4, 5, 6, 7]]
links:
  node: {bandwidth_GBps: 450, latency_us: 2, kind: nvlink}
  supernode: {bandwidth_GBps: 200, latency_us: 4, kind: nvswitch}
  inter: {bandwidth_GBps: 50, latency_us: 8, kind: infiniband}
"""


@pytest.fixture
def site_file(tmp_path):
    path = tmp_path / "plantest.yaml"
    path.write_text(SITE_YAML)
    return str(path)


@needs_loader
def test_subprocess_json_plan(site_file):
    proc = run_cli(
        "--site", site_file, "--nodelist", "n[7,0-6]", "--tp", "4", "--pp", "2", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [n["hostname"] for n in doc["nodes"]] == [f"n{i}" for i in range(8)]
    assert doc["layout"] == {
        "framework": "megatron",
        "tp": 4,
        "cp": 1,
        "ep": 1,
        "etp": 4,
        "dp": 8,
        "edp": 8,
        "pp": 2,
        "order": "tp-cp-ep-dp-pp",
    }
    assert doc["nodes"][0]["visible_devices"] == list(range(8))


@needs_loader
def test_subprocess_env_defaults_and_cost(site_file):
    proc = run_cli(
        "--model",
        "llama-70b",
        "--compute-time",
        "2",
        env={"SLURM_JOB_NODELIST": "n[0-7]", "SNRUN_SITE": site_file},
    )
    assert proc.returncode == 0, proc.stderr
    assert "Communication per step" in proc.stdout


@needs_loader
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nodelist", "n[0-7]", "--tp", "3"], "nearest feasible: "),
        (["--nodelist", "n[0-7],zz9"], "zz9"),
        (["--nodelist", "n[0-7]", "--order", "tp-pp"], "not a permutation"),
    ],
)
def test_subprocess_placement_errors(site_file, args, message):
    proc = run_cli("--site", site_file, *args)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr


# -- framework layouts (issue 13) ----------------------------------------------------------
def test_framework_options_reach_the_plan(site, capsys):
    argv = ["plan", "--site", "x", "--nodelist", "h[0-1]", "--tp", "2", "--ep", "4", "--json"]
    assert main([*argv, "--etp", "1", "--use-tp-pp-dp-mapping"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["layout"]["etp"], doc["layout"]["dp"], doc["layout"]["edp"]) == (1, 8, 4)
    assert doc["layout"]["order"] == "tp-cp-ep-pp-dp"
    assert doc["groups"]["ep"]["stride"] == 1  # etp=1: EP neighbours are adjacent ranks
    assert main([*argv, "--framework", "torchtitan"]) == 0  # torchtitan's default etp is 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["layout"]["framework"] == "torchtitan" and doc["layout"]["etp"] == 1
    assert doc["groups"]["ep"]["stride"] == 1
    assert main([*argv, "--framework", "torchtitan", "--etp", "1"]) == 0  # its only etp
    assert json.loads(capsys.readouterr().out)["groups"]["ep"]["stride"] == 1
    assert main([*argv[:-3], "--json", "--framework", "torchtitan", "--etp", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["layout"]["etp"] == 2  # no EP: experts follow tp
    # without EP torchtitan has no etp of its own: an --etp other than tp would be ignored
    assert main([*argv[:-3], "--json", "--framework", "torchtitan", "--etp", "1"]) == 2
    err = capsys.readouterr().err
    assert "--etp: torchtitan uses no expert tensor parallel size without EP" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ep", "4", "--model", "llama-70b", "--compute-time", "1"], "--ep: --ep 4 on a dense"),
        (["--ep", "3", "--model", "mixtral-8x7b", "--compute-time", "1"], "not a multiple of ep=3"),
        (["--order", "tp-cp-ep-dp-pp", "--use-tp-pp-dp-mapping"], "selects order"),
        (["--framework", "deepspeed"], "--framework: unknown value 'deepspeed'"),
        (["--etp", "0"], "--etp: must be >= 1"),
    ],
)
def test_layout_input_errors(site, capsys, args, message):
    try:
        code = main(["plan", "--site", "x", "--nodelist", "h[0-1]", *args])
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_framework_refusal_is_one_line(site, capsys):
    argv = ["plan", "--site", "x", "--nodelist", "h[0-1]", "--tp", "4", "--ep", "2"]
    assert main([*argv, "--etp", "2", "--framework", "torchtitan"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("snrun plan: error: layout: torchtitan has no expert tensor parallelism")
    assert "\n" not in err


# -- plans that answer the user's question -----------------------------------------------------
NVL72 = str(ROOT / "site-configs" / "nvl72.yaml")


def _plan(capsys, *args: str) -> tuple[str, str]:
    assert main(["plan", "--site", NVL72, *args]) == 0
    out = capsys.readouterr()
    return out.out, out.err


@needs_loader
def test_dense_model_shows_no_expert_rows_a_moe_model_does(capsys):
    dense, _ = _plan(capsys, "-S", "1", "--tp", "4", "--model", "llama-70b", "--tflops", "2500",
                     "--recommend", "--top", "2")  # fmt: skip
    groups = dense.split("Groups")[1].split("\n\n")[0]
    dims = [line.split()[0] for line in groups.splitlines()[2:] if line.split()]
    assert dims[:4] == ["tp", "cp", "dp", "pp"] and not {"ep", "etp", "edp"} & set(dims)
    assert "expert" not in dense.splitlines()[1] and "tp=4 cp=1 dp=18 pp=1" in dense
    header = dense.split("Recommended layouts")[1].splitlines()[1].split()
    assert header[:5] == ["#", "TP", "CP", "DP", "PP"] and "EDP" not in header
    moe, _ = _plan(capsys, "-S", "1", "--ep", "8", "--model", "mixtral-8x7b", "--tflops", "2500")
    assert "; expert etp=1 ep=8" in moe and "\nep   expert" in moe


@needs_loader
def test_plan_by_size_without_a_nodelist(capsys, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gb[001-004]")  # a size wins over the job's nodes
    by_sn, _ = _plan(capsys, "-S", "2")
    assert by_sn.startswith("Plan: 144 ranks = 36 nodes x 4 on 2 super nodes (site nvl72)")
    by_nodes, _ = _plan(capsys, "--nodes", "20")
    assert by_nodes.startswith("Plan: 80 ranks = 20 nodes x 4 on 2 super nodes")
    assert main(["plan", "--site", NVL72, "-S", "9"]) == 2
    assert "-S/--supernodes: site nvl72 has 4 super nodes, not 9" in capsys.readouterr().err
    assert main(["plan", "--site", NVL72, "-S", "1", "--nodelist", "gb[001-018]"]) == 2
    assert "give either --nodelist or a size" in capsys.readouterr().err
    assert main(["plan", "--site", NVL72, "-S", "1", "-N", "4"]) == 2


@needs_loader
def test_memory_per_device_is_checked_against_the_sites_devices(capsys):
    args = ["-S", "1", "--model", "llama-70b", "--tflops", "2500"]
    big, _ = _plan(capsys, *args)  # tp=pp=1: 70e9 params of state on every GPU
    assert "memory: WARN state 1129.6 GB/device does not fit the site's devices (186 GB)" in big
    fits, _ = _plan(capsys, *args, "--tp", "4", "--pp", "6")
    assert "memory: state 47.1 GB/device fits the site's devices (186 GB" in fits
    assert "WARN" not in fits
    _, err = _plan(capsys, *args, "--json")
    assert "warning: this layout needs 1129.6 GB of state per device" in err
    recs, _ = _plan(capsys, *args, "--recommend", "--device-memory", "80")
    table = recs.split("Recommended layouts")[1]
    assert "only layouts whose state fits 80 GB per device" in table
    as_json, _ = _plan(capsys, *args, "--recommend", "--device-memory", "80", "--json")
    states = [r["memory_gb"] for r in json.loads(as_json)["recommendations"]]
    assert states and max(states) <= 80
    roomy, _ = _plan(capsys, *args, "--recommend", "--device-memory", "2000", "--json")
    assert max(r["memory_gb"] for r in json.loads(roomy)["recommendations"]) > 80  # filtered


@needs_loader
def test_header_says_what_compute_means(capsys):
    out, _ = _plan(capsys, "-S", "1", "--model", "llama-70b", "--tflops", "2500", "--mfu", "0.5")
    assert "compute = 6 x active parameters x tokens / devices / (2500 TFLOP/s peak per " in out
    assert "peak per device x 0.5 MFU), + the pipeline bubble" in out
    given, _ = _plan(capsys, "-S", "1", "--model", "llama-70b", "--compute-time", "3")
    assert "compute time per step as given (--compute-time)" in given
    local = main(["plan", "--site", "local", "-S", "1", "--model", "llama-70b", "--tflops", "9"])
    assert local == 0 and "not checked: the site gives no device_memory_gb" in (
        capsys.readouterr().out
    )
