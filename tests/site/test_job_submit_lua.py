"""The job-submit-lua exporter: golden copies, Lua syntax, and the plugin's decisions run in a
real Lua 5.1 and 5.3 interpreter against a stand-in for slurmctld's ``slurm`` table (the same
calls job_submit_lua.c makes: ``slurm_job_submit(job_desc, part_list, uid)`` with plain tables).

Golden files change only on purpose: ``SNRUN_REGEN_GOLDEN=1 python3 -m pytest
tests/site/test_export.py`` and review the diff."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_supernode.errors import InputError
from slurm_supernode.site.export import export
from slurm_supernode.site.job_submit import lua_str
from slurm_supernode.site.loader import load_site

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden"
LUAC = shutil.which("luac5.1")
# job_submit/lua pushes every number with lua_pushnumber: a float under Lua 5.3+ (3.0, printed
# "3.0"), an integer-valued double under 5.1. Debian's Slurm (22.05, 24.11, 26.05) links Lua
# 5.1; Slurm 25.11 built from source here links Lua 5.3. The plugin's decisions run under both.
LUAS = {"5.1": shutil.which("lua5.1"), "5.3": shutil.which("lua5.3")}
LUA: str | None = None  # the interpreter of the running test (the `lua` fixture sets it)
FLOATS = False  # numbers handed to the plugin as Lua 5.3 floats


@pytest.fixture(params=sorted(LUAS))
def lua(request, monkeypatch) -> str:
    """Run the test under Lua 5.1 and Lua 5.3 (numbers as floats, as slurmctld pushes them)."""
    path = LUAS[request.param]
    if path is None:
        pytest.skip(f"lua{request.param} not installed (apt-get install lua{request.param})")
    monkeypatch.setattr(sys.modules[__name__], "LUA", path)
    monkeypatch.setattr(sys.modules[__name__], "FLOATS", request.param != "5.1")
    return request.param


needs_lua = pytest.mark.usefixtures("lua")

NO_VAL, NO_VAL16, INVALID_NODE_COUNT = 4294967294, 65534, 2006

# Stand-in for the `slurm` table job_submit/lua provides (log_user formats like string.format).
PRELUDE = f"""
MSGS = {{}}
slurm = {{ SUCCESS = 0, ERROR = -1, ESLURM_INVALID_NODE_COUNT = {INVALID_NODE_COUNT},
  NO_VAL = {NO_VAL}, NO_VAL16 = {NO_VAL16},
  log_info = function(fmt, ...) INFO = (INFO or "") .. string.format(fmt, ...) .. " / " end,
  log_user = function(fmt, ...) MSGS[#MSGS + 1] = string.format(fmt, ...) end }}
"""

REPORT = """
local out = {"rc=" .. tostring(rc)}
for _, k in ipairs({"min_nodes", "max_nodes", "features", "segment_size", "req_switch"}) do
  out[#out + 1] = k .. "=" .. tostring(job[k])
end
out[#out + 1] = "msg=" .. table.concat(MSGS, " / ")
out[#out + 1] = "info=" .. (INFO or "")
print(table.concat(out, "\\n"))
"""


def lua_value(v, floats: bool = False) -> str:
    """A Lua literal; floats=True writes numbers as floats (3.0), as lua_pushnumber gives them
    under Lua 5.3+."""
    if v is None:
        return "nil"
    if isinstance(v, str):
        return lua_str(v)
    if isinstance(v, dict):
        items = (f"[{lua_str(k)}] = {lua_value(x, floats)}" for k, x in v.items())
        return "{" + ", ".join(items) + "}"
    if floats and isinstance(v, int) and not isinstance(v, bool):
        return f"{v}.0"
    return str(v)


# Slurm 24.11's job_desc has no segment_size field: reading it gives nil, setting it only logs
# "_set_job_field: unrecognized field: segment_size" (measured on 24.11.5). A proxy table does
# the same, and records the attempt.
NO_SEGMENT_FIELD = """
local fields = job
job = setmetatable({}, {
  __index = fields,
  __newindex = function(_, k, v)
    if k == "segment_size" then SET_UNKNOWN = (SET_UNKNOWN or "") .. k else fields[k] = v end
  end,
})
"""


def run_plugin(
    script: Path,
    job: dict,
    part_list: dict | None = None,
    rec: dict | None = None,
    *,
    segment_field: bool = True,
    env: dict[str, str] | None = None,
    all_error_codes: bool = True,
):
    """Load the exported script and call slurm_job_submit (or slurm_job_modify with rec).
    segment_field=False: a job_desc like Slurm 24.11's, without segment_size.
    all_error_codes=False: a slurm table like 22.05's (eight ESLURM_* names; log_user dropped
    in job_modify), True: 23.02+ (every code, ESLURM_INVALID_JOB_ID among them)."""
    job = {"min_nodes": NO_VAL, "segment_size": NO_VAL16, "num_tasks": NO_VAL, **job}
    if not segment_field:
        job.pop("segment_size")
    call = (
        "slurm_job_modify(job, " + lua_value(rec, FLOATS) + ", part_list, 0)"
        if rec is not None
        else "slurm_job_submit(job, part_list, 0)"
    )
    driver = (
        PRELUDE
        + ("slurm.ESLURM_INVALID_JOB_ID = 2017\n" if all_error_codes else "")
        + f"assert(dofile({lua_str(str(script))}) == 0)\n"
        + f"job = {lua_value(job, FLOATS)}\npart_list = {lua_value(part_list, FLOATS)}\n"
        + ("" if segment_field else NO_SEGMENT_FIELD)
        + f"rc = {call}\n"
        + 'MSGS[#MSGS + 1] = SET_UNKNOWN and ("set unknown field " .. SET_UNKNOWN) or nil\n'
        + REPORT
    )
    # the caller's SLURM_CONF (a test cluster's) must not decide strategy auto here
    env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"} | (env or {})
    proc = subprocess.run(
        [LUA, "-"], input=driver, capture_output=True, text=True, timeout=30, env=env
    )
    assert proc.returncode == 0, proc.stderr
    result = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition("=")
        result[key] = value
    for key in ("rc", "min_nodes", "max_nodes", "segment_size", "req_switch"):
        result[key] = None if result[key] == "nil" else int(float(result[key]))
    return result


@pytest.fixture(scope="module")
def scripts(tmp_path_factory) -> dict[str, Path]:
    """The bundled sites' plugins with the whole rule these tests check (the default is
    aligned: tests at the end of this file)."""
    out = tmp_path_factory.mktemp("lua")
    paths = {}
    for name in ("local", "nvl72", "ib-8gpu"):
        paths[name] = out / f"{name}.lua"
        text = with_small_jobs((ROOT / "site-configs" / f"{name}.yaml").read_text(), "whole")
        (out / f"{name}.yaml").write_text(text)
        paths[name].write_text(export(load_site(str(out / f"{name}.yaml")), "job-submit-lua"))
    return paths


def with_small_jobs(text: str, policy: str) -> str:
    """A site's YAML with ``slurm.small_jobs: policy`` (whatever it said before)."""
    text = re.sub(r"(?m)^  small_jobs: .*\n(?:^ {20,}#.*\n)*", "", text)
    return text.replace("\nslurm:\n", f"\nslurm:\n  small_jobs: {policy}\n", 1)


# Golden copies of the exported Lua live with the other exports (tests/site/test_export.py).


@pytest.mark.skipif(LUAC is None, reason="luac5.1 not installed (apt-get install lua5.1)")
@pytest.mark.parametrize("name", ["local", "nvl72", "ib-8gpu", "ascend-superpod"])
def test_lua_syntax(name, tmp_path):
    path = tmp_path / "job_submit.lua"
    site = load_site(str(ROOT / "site-configs" / f"{name}.yaml"))
    path.write_text(export(site, "job-submit-lua"))
    proc = subprocess.run([LUAC, "-p", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_table_names_partitions_sizes_and_features():
    site = load_site(str(ROOT / "site-configs" / "local.yaml"))
    text = export(site, "job-submit-lua")
    assert 'SITE.partitions["main"]' in text and 'SITE.partitions["debug"]' not in text
    assert '{ size = 4, count = 2, constraint = "sn0|sn1" }' in text
    assert 'default_partition = "main"' in text


def test_site_without_supernode_partitions_is_refused(tmp_path):
    text = (ROOT / "site-configs" / "local.yaml").read_text()
    path = tmp_path / "s.yaml"
    path.write_text(text.replace("  supernode_partitions: [main]\n", ""))
    with pytest.raises(InputError, match="supernode_partitions"):
        export(load_site(str(path)), "job-submit-lua")


def test_cli_writes_the_file(tmp_path):
    out = tmp_path / "job_submit.lua"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "slurm_supernode",
            "site",
            "export",
            "local",
            "--format",
            "job-submit-lua",
            "-o",
            str(out),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "function slurm_job_submit" in out.read_text()


@needs_lua
def test_rounds_up_to_one_whole_super_node(scripts):
    r = run_plugin(scripts["local"], {"min_nodes": 3, "partition": "main"})
    assert (r["rc"], r["min_nodes"], r["max_nodes"], r["features"]) == (0, 4, 4, "[sn0|sn1]")
    assert "-N 3 became -N 4" in r["msg"]


@needs_lua
def test_whole_count_gets_the_constraint_without_a_message(scripts):
    r = run_plugin(scripts["local"], {"min_nodes": 4, "partition": "main"})
    assert (r["rc"], r["min_nodes"], r["features"], r["msg"]) == (0, 4, "[sn0|sn1]", "")


@needs_lua
def test_impossible_request_is_rejected_with_the_limit(scripts):
    r = run_plugin(scripts["local"], {"min_nodes": 9, "partition": "main"})
    assert r["rc"] == INVALID_NODE_COUNT
    assert "can never fit" in r["msg"] and "at most 8 nodes" in r["msg"]
    assert r["min_nodes"] == 9  # untouched


@needs_lua
def test_two_super_nodes_on_a_features_site_point_to_snrun(scripts):
    r = run_plugin(scripts["local"], {"min_nodes": 5, "partition": "main"})
    assert r["rc"] == INVALID_NODE_COUNT and "snrun -S 2" in r["msg"]


@needs_lua
def test_other_partitions_and_placed_jobs_are_untouched(scripts):
    debug = run_plugin(scripts["local"], {"min_nodes": 3, "partition": "debug"})
    assert (debug["rc"], debug["min_nodes"], debug["features"]) == (0, 3, "nil")
    partial = run_plugin(scripts["local"], {"min_nodes": 3, "features": "[sn0|sn1]"})
    assert (partial["min_nodes"], partial["features"]) == (3, "[sn0|sn1]")
    segment = run_plugin(scripts["local"], {"min_nodes": 8, "segment_size": 4})
    assert (segment["rc"], segment["min_nodes"], segment["segment_size"]) == (0, 8, 4)


@needs_lua
def test_default_partition_from_part_list_then_table(scripts):
    main_default = {"main": {"flag_default": 1}, "debug": {"flag_default": 0}}
    debug_default = {"main": {"flag_default": 0}, "debug": {"flag_default": 1}}
    assert run_plugin(scripts["local"], {"min_nodes": 3}, main_default)["min_nodes"] == 4
    assert run_plugin(scripts["local"], {"min_nodes": 3}, debug_default)["min_nodes"] == 3
    assert run_plugin(scripts["local"], {"min_nodes": 3}, None)["min_nodes"] == 4


@needs_lua
def test_count_from_gpus_tasks_or_nothing(scripts):
    gpus = run_plugin(scripts["local"], {"tres_per_job": "gres:gpu:12", "partition": "main"})
    assert gpus["min_nodes"] == 4 and "--gpus=12 (2 nodes of 8 GPUs)" in gpus["msg"]
    too_many = run_plugin(scripts["local"], {"tres_per_job": "gres/gpu:h100:72"})
    assert too_many["rc"] == INVALID_NODE_COUNT  # 9 nodes of 8 GPUs
    tasks = run_plugin(scripts["local"], {"num_tasks": 6, "ntasks_per_node": 1})
    assert tasks["rc"] == INVALID_NODE_COUNT  # 6 nodes: two super nodes, features site
    bare = run_plugin(scripts["local"], {})
    assert (bare["min_nodes"], bare["features"]) == (4, "[sn0|sn1]")


@needs_lua
def test_own_constraint_is_anded(scripts):
    one = run_plugin(scripts["local"], {"min_nodes": 1, "features": "bigmem"})
    assert one["features"] == "bigmem&[sn0|sn1]"
    alt = run_plugin(scripts["local"], {"min_nodes": 1, "features": "a|b"})
    assert alt["features"] == "(a|b)&[sn0|sn1]"


@needs_lua
def test_mixed_partition_list_is_rejected(scripts):
    r = run_plugin(scripts["local"], {"min_nodes": 4, "partition": "main,debug"})
    assert r["rc"] == INVALID_NODE_COUNT and "mix" in r["msg"]


@needs_lua
def test_block_site_uses_segments(scripts):
    r = run_plugin(scripts["nvl72"], {"min_nodes": 20, "partition": "gb200"})
    assert (r["rc"], r["min_nodes"], r["segment_size"]) == (0, 36, 18)
    one = run_plugin(scripts["nvl72"], {"min_nodes": 5, "partition": "gb200"})
    assert one["min_nodes"] == 18 and one["features"].startswith("[nvl72-01|")
    assert run_plugin(scripts["nvl72"], {"min_nodes": 73})["rc"] == INVALID_NODE_COUNT


@needs_lua
def test_block_site_without_segment_field_says_what_to_type(scripts):
    """24.11: the plugin cannot set a segment; it must not claim it did, and must say what the
    user should type instead; one super node still gets its constraint."""
    r = run_plugin(scripts["nvl72"], {"min_nodes": 20, "partition": "gb200"}, segment_field=False)
    assert (r["rc"], r["min_nodes"], r["max_nodes"], r["segment_size"]) == (0, 36, 36, None)
    assert "set unknown field" not in r["msg"]
    assert "(--segment=18)" not in r["msg"] and "no segment set" in r["msg"]
    assert "--segment=18" in r["msg"] and "snrun -S 2" in r["msg"]
    one = run_plugin(scripts["nvl72"], {"min_nodes": 5, "partition": "gb200"}, segment_field=False)
    assert one["min_nodes"] == 18 and one["features"].startswith("[nvl72-01|")
    assert "--segment" not in one["msg"]
    # 26.05 reads an unset segment as 0: the field exists, so it is set
    r = run_plugin(scripts["nvl72"], {"min_nodes": 20, "partition": "gb200", "segment_size": 0})
    assert (r["min_nodes"], r["segment_size"]) == (36, 18) and "(--segment=18)" in r["msg"]


@needs_lua
def test_segment_request_is_one_whole_super_node_under_whole(scripts):
    """25.11.2+ shows the user's --segment: under small_jobs whole a segment is one super
    node, and the node count a whole number of segments; refusals name what to type."""
    ok = run_plugin(scripts["local"], {"min_nodes": 8, "segment_size": 4, "partition": "main"})
    assert (ok["rc"], ok["min_nodes"], ok["segment_size"], ok["msg"]) == (0, 8, 4, "")
    assert "-N 8 --segment=4 accepted (2 segments)" in ok["info"]
    small = run_plugin(scripts["local"], {"min_nodes": 4, "segment_size": 2})
    assert small["rc"] == INVALID_NODE_COUNT and small["min_nodes"] == 4
    assert "--segment=2 does not fit" in small["msg"] and "Use --segment=4," in small["msg"]
    assert "one whole super node" in small["msg"]
    big = run_plugin(scripts["local"], {"min_nodes": 8, "segment_size": 8})
    assert big["rc"] == INVALID_NODE_COUNT and "Use --segment=4," in big["msg"]
    uneven = run_plugin(scripts["local"], {"min_nodes": 6, "segment_size": 4})
    assert uneven["rc"] == INVALID_NODE_COUNT
    assert "-N 6 is not a whole number of --segment=4 segments; use -N 4 or -N 8" in uneven["msg"]
    few = run_plugin(scripts["local"], {"min_nodes": 2, "segment_size": 4})
    assert few["rc"] == INVALID_NODE_COUNT and "use -N 4." in few["msg"]
    gpus = run_plugin(scripts["nvl72"], {"tres_per_job": "gres:gpu:144", "segment_size": 18,
                                         "partition": "gb200"})  # fmt: skip
    assert (gpus["rc"], gpus["segment_size"]) == (0, 18)  # 144 GPUs / 4 per tray = 36 trays


@needs_lua
def test_segment_is_not_seen_where_the_plugin_has_no_field(scripts):
    """24.11: job_desc has no segment_size (nil): the job is rounded as a plain one, never
    refused for a segment the plugin cannot see."""
    r = run_plugin(scripts["local"], {"min_nodes": 3}, segment_field=False)
    assert (r["rc"], r["min_nodes"], r["segment_size"]) == (0, 4, None)
    # 26.05 reads an unset segment as 0, 25.11 as NO_VAL16: both are "no --segment"
    for unset in (0, NO_VAL16):
        r = run_plugin(scripts["local"], {"min_nodes": 3, "segment_size": unset})
        assert (r["rc"], r["min_nodes"]) == (0, 4)


@needs_lua
def test_switches_site_asks_for_k_switches(scripts):
    r = run_plugin(scripts["ib-8gpu"], {"min_nodes": 20, "partition": "h100"})
    assert (r["rc"], r["min_nodes"], r["req_switch"]) == (0, 32, 2)
    assert "best effort" in r["msg"]


@needs_lua
def test_mixed_sizes_pick_the_smallest_fit(tmp_path):
    site_yaml = (ROOT / "site-configs" / "local.yaml").read_text()
    site_yaml = site_yaml.replace("nodes: n[4-7]", "nodes: n[4-11]")
    (tmp_path / "s.yaml").write_text(site_yaml)
    script = tmp_path / "js.lua"
    script.write_text(export(load_site(str(tmp_path / "s.yaml")), "job-submit-lua"))
    small = run_plugin(script, {"min_nodes": 3})
    assert (small["min_nodes"], small["features"]) == (4, "[sn0]")
    big = run_plugin(script, {"min_nodes": 6})
    assert (big["min_nodes"], big["features"]) == (8, "[sn1]")


@needs_lua
def test_modify_checks_new_node_counts(scripts):
    rec = {"partition": "main", "features": "[sn0|sn1]"}
    bad = run_plugin(scripts["local"], {"min_nodes": 3}, rec=rec)
    assert bad["rc"] == INVALID_NODE_COUNT and "use NumNodes=4" in bad["msg"]
    good = run_plugin(scripts["local"], {"min_nodes": 4}, rec=rec)
    assert (good["rc"], good["max_nodes"]) == (0, 4)
    unchanged = run_plugin(scripts["local"], {"time_limit": 10}, rec=rec)
    assert unchanged["rc"] == 0
    other = run_plugin(scripts["local"], {"min_nodes": 3}, rec={"partition": "debug"})
    assert other["rc"] == 0


@needs_lua
def test_a_refused_update_is_explained_in_the_log_where_slurm_drops_log_user(scripts):
    """Slurm < 23.02 drops log_user() in job_modify: the refusal is the same, its explanation
    goes to slurmctld's log with the job id, and the load line says where refusals go."""
    rec = {"partition": "main", "features": "[sn0|sn1]", "job_id": 25}
    old = run_plugin(scripts["local"], {"min_nodes": 3}, rec=rec, all_error_codes=False)
    assert old["rc"] == INVALID_NODE_COUNT and old["msg"] == ""
    assert "snrun job_submit: job 25 update refused: partition main" in old["info"]
    assert "use NumNodes=4" in old["info"]
    assert "refused updates explained in this log only (Slurm < 23.02)" in old["info"]
    new = run_plugin(scripts["local"], {"min_nodes": 3}, rec=rec)
    assert new["rc"] == INVALID_NODE_COUNT and "use NumNodes=4" in new["msg"]
    assert "job 25 update refused" in new["info"]  # the admin's log has it on every version
    assert "refused updates explained to the user" in new["info"]
    submit = run_plugin(scripts["local"], {"min_nodes": 9}, all_error_codes=False)
    assert "can never fit" in submit["msg"]  # job_submit's log_user works on every version


# -- strategy auto: decided from the Slurm configuration next to the script (at load) ------------


def auto_site_script(folder: Path, site: str = "nvl72", **files: str) -> Path:
    """The site's plugin with strategy auto, installed in folder next to the given files."""
    text = (ROOT / "site-configs" / f"{site}.yaml").read_text()
    text = text.replace("strategy: block", "strategy: auto")
    text = with_small_jobs(text, "whole")  # the rule these tests check
    (folder / "site.yaml").write_text(text)
    script = folder / "job_submit.lua"
    script.write_text(export(load_site(str(folder / "site.yaml")), "job-submit-lua"))
    for name, body in files.items():
        (folder / name.replace("_", ".")).write_text(body)
    return script


BLOCK_CONF = "ClusterName=x\n# TopologyPlugin=topology/tree\ntopologyplugin = topology/block\n"


@needs_lua
def test_auto_on_a_block_slurm_conf_acts_as_block(tmp_path):
    """24.11 (no segment field): snrun's own -N 36 --segment=18 request and a plain -N 20 get
    through as block (whole count, the message what to type), not refused as multi-super-node."""
    script = auto_site_script(tmp_path, slurm_conf=BLOCK_CONF)
    r = run_plugin(script, {"min_nodes": 36, "partition": "gb200"}, segment_field=False)
    assert (r["rc"], r["min_nodes"], r["max_nodes"]) == (0, 36, 36)
    assert "strategy auto -> block (topology/block in" in r["info"]
    r = run_plugin(script, {"min_nodes": 20, "partition": "gb200"}, segment_field=False)
    assert (r["rc"], r["min_nodes"]) == (0, 36) and "--segment=18" in r["msg"]
    # 26.05 (segment field present): the plugin sets the segment itself
    r = run_plugin(script, {"min_nodes": 20, "partition": "gb200", "segment_size": 0})
    assert (r["rc"], r["min_nodes"], r["segment_size"]) == (0, 36, 18)


@needs_lua
def test_auto_on_a_tree_or_missing_conf_refuses_multi_super_node_jobs(tmp_path):
    (tmp_path / "tree").mkdir()
    (tmp_path / "none").mkdir()
    tree = auto_site_script(tmp_path / "tree", slurm_conf="TopologyPlugin=topology/tree\n")
    none = auto_site_script(tmp_path / "none")
    for script, why in ((tree, "topology tree in"), (none, "no TopologyPlugin, no topology.yaml")):
        r = run_plugin(script, {"min_nodes": 20, "partition": "gb200"})
        assert r["rc"] == INVALID_NODE_COUNT and "snrun -S 2" in r["msg"], r
        assert "strategy auto -> features" in r["info"] and why in r["info"]


@needs_lua
def test_auto_follows_include_and_slurm_conf_env(tmp_path):
    inc = tmp_path / "topo.conf"
    inc.write_text("TopologyPlugin=topology/block\n")
    script = auto_site_script(tmp_path, slurm_conf="Include topo.conf\n")
    r = run_plugin(script, {"min_nodes": 20, "partition": "gb200"}, segment_field=False)
    assert (r["rc"], r["min_nodes"]) == (0, 36)
    # slurmctld started with another file of this folder (SLURM_CONF): that file decides
    (tmp_path / "other.conf").write_text("TopologyPlugin=topology/tree\n")
    env = {"SLURM_CONF": str(tmp_path / "other.conf")}
    r = run_plugin(script, {"min_nodes": 20, "partition": "gb200"}, env=env)
    assert r["rc"] == INVALID_NODE_COUNT
    # a SLURM_CONF of another folder is not this slurmctld's: the folder's slurm.conf decides
    env = {"SLURM_CONF": "/nonexistent/slurm.conf"}
    r = run_plugin(script, {"min_nodes": 20, "partition": "gb200"}, env=env, segment_field=False)
    assert r["rc"] == 0


TOPOLOGY_YAML = """- topology: t1
  cluster_default: {tree_default}
  tree:
    switches:
    - switch: s0
      nodes: n[0-3]
- topology: b1
  cluster_default: {block_default}
  block:
    block_sizes:
    - 18
    blocks:
    - block: b0
      nodes: n[0-17]
"""


@needs_lua
def test_auto_reads_topology_yaml_default_and_partition_topology(tmp_path):
    """topology.yaml (25.05+) wins over TopologyPlugin; a partition's Topology= picks one."""
    for name, tree_default, partition_line, want in (
        ("blockdefault", "false", "", 0),
        ("treedefault", "true", "", INVALID_NODE_COUNT),
        ("parttree", "false", "PartitionName=gb200 Nodes=ALL Topology=t1\n", INVALID_NODE_COUNT),
        ("partblock", "true", "PartitionName=other,gb200 Topology=b1 State=UP\n", 0),
    ):
        folder = tmp_path / name
        folder.mkdir()
        yaml_text = TOPOLOGY_YAML.format(
            tree_default=tree_default, block_default="true" if tree_default == "false" else "false"
        )
        script = auto_site_script(
            folder,
            slurm_conf="TopologyPlugin=topology/tree\n" + partition_line,
            topology_yaml=yaml_text,
        )
        r = run_plugin(script, {"min_nodes": 20, "partition": "gb200"}, segment_field=False)
        assert r["rc"] == want, (name, r)
        assert "topology.yaml (topology " in r["info"]


# -- small_jobs: aligned (keep the size, one super node) ------------------------------------------


@pytest.fixture(scope="module")
def aligned(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("aligned")
    paths = {}
    for name in ("local", "nvl72"):
        text = (ROOT / "site-configs" / f"{name}.yaml").read_text()
        text = with_small_jobs(text, "aligned")
        (out / f"{name}.yaml").write_text(text)
        paths[name] = out / f"{name}.lua"
        paths[name].write_text(export(load_site(str(out / f"{name}.yaml")), "job-submit-lua"))
    return paths


@needs_lua
def test_aligned_keeps_small_jobs_at_their_size_in_one_super_node(aligned):
    for n in (1, 3, 4):
        r = run_plugin(aligned["local"], {"min_nodes": n, "partition": "main"})
        assert (r["rc"], r["min_nodes"], r["max_nodes"]) == (0, n, n)
        assert r["features"] == "[sn0|sn1]" and r["msg"] == ""
    gpus = run_plugin(aligned["local"], {"tres_per_job": "gres:gpu:12", "partition": "main"})
    assert (gpus["min_nodes"], gpus["features"]) == (2, "[sn0|sn1]")
    own = run_plugin(aligned["local"], {"min_nodes": 2, "features": "bigmem"})
    assert (own["min_nodes"], own["features"]) == (2, "bigmem&[sn0|sn1]")


@needs_lua
def test_aligned_still_rounds_jobs_over_one_super_node(aligned):
    features = run_plugin(aligned["local"], {"min_nodes": 5, "partition": "main"})
    assert features["rc"] == INVALID_NODE_COUNT and "snrun -S 2" in features["msg"]
    block = run_plugin(aligned["nvl72"], {"min_nodes": 20, "partition": "gb200"})
    assert (block["rc"], block["min_nodes"], block["segment_size"]) == (0, 36, 18)
    small = run_plugin(aligned["nvl72"], {"min_nodes": 5, "partition": "gb200"})
    assert (small["min_nodes"], small["segment_size"]) == (5, 65534)
    assert small["features"].startswith("[nvl72-01|")


@needs_lua
def test_aligned_on_mixed_sizes_allows_every_super_node_that_holds_the_job(tmp_path):
    text = (ROOT / "site-configs" / "local.yaml").read_text()
    text = text.replace("nodes: n[4-7]", "nodes: n[4-11]")
    text = with_small_jobs(text, "aligned")
    (tmp_path / "s.yaml").write_text(text)
    script = tmp_path / "js.lua"
    script.write_text(export(load_site(str(tmp_path / "s.yaml")), "job-submit-lua"))
    three = run_plugin(script, {"min_nodes": 3})
    assert (three["min_nodes"], three["features"]) == (3, "[sn0|sn1]")
    six = run_plugin(script, {"min_nodes": 6})
    assert (six["min_nodes"], six["features"]) == (6, "[sn1]")


@needs_lua
def test_aligned_segments_divide_a_super_node(aligned):
    for s, n in ((1, 3), (2, 6), (4, 8)):
        r = run_plugin(aligned["local"], {"min_nodes": n, "segment_size": s})
        assert (r["rc"], r["min_nodes"], r["segment_size"]) == (0, n, s), r
    three = run_plugin(aligned["local"], {"min_nodes": 6, "segment_size": 3})
    assert three["rc"] == INVALID_NODE_COUNT
    assert "a segment must divide a super node" in three["msg"]
    assert "Use --segment=1, 2, 4," in three["msg"]
    nvl = run_plugin(aligned["nvl72"], {"min_nodes": 20, "segment_size": 4, "partition": "gb200"})
    assert "Use --segment=1, 2, 3, 6, 9, 18," in nvl["msg"]
    ok = run_plugin(aligned["nvl72"], {"min_nodes": 18, "segment_size": 6, "partition": "gb200"})
    assert (ok["rc"], ok["segment_size"]) == (0, 6)


@needs_lua
def test_aligned_modify_accepts_counts_inside_one_super_node(aligned):
    rec = {"partition": "main", "features": "[sn0|sn1]"}
    three = run_plugin(aligned["local"], {"min_nodes": 3}, rec=rec)
    assert (three["rc"], three["max_nodes"]) == (0, 3)
    five = run_plugin(aligned["local"], {"min_nodes": 5}, rec=rec)
    assert five["rc"] == INVALID_NODE_COUNT


def test_small_jobs_policy_is_checked(tmp_path):
    text = (ROOT / "site-configs" / "local.yaml").read_text()
    (tmp_path / "s.yaml").write_text(text.replace("\nslurm:\n", "\nslurm:\n  small_jobs: tiny\n"))
    with pytest.raises(InputError, match="small_jobs"):
        load_site(str(tmp_path / "s.yaml"))
