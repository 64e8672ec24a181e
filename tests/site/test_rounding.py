"""One whole-super-node rounding rule for snrun and for plain sbatch through the plugin.

For every bundled site and a mixed-size one, every node count from 1 to past the site's
capacity: snrun's request (launch.request), the rule (site.rounding) and the exported
job_submit.lua run in Lua 5.1 land on the same number of nodes and super node size."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest

from slurm_supernode.errors import InputError
from slurm_supernode.launch.jobspec import JobSpec
from slurm_supernode.launch.request import plan_request
from slurm_supernode.site.export import export
from slurm_supernode.site.job_submit import lua_str
from slurm_supernode.site.loader import load_site
from slurm_supernode.site.rounding import Rounded, SizeClass, capacity, round_up, size_classes

ROOT = Path(__file__).resolve().parents[2]
LUA = shutil.which("lua5.1")
BUNDLED = ["local", "nvl72", "ib-8gpu", "ascend-superpod"]

DRIVER = """
slurm = { SUCCESS = 0, ERROR = -1, ESLURM_INVALID_NODE_COUNT = 2006, NO_VAL = 4294967294,
  NO_VAL16 = 65534, log_info = function(...) end, log_user = function(...) end }
assert(dofile(%s) == 0)
for n = 1, %d do
  local job = { min_nodes = n, num_tasks = 4294967294, segment_size = 65534, partition = %s }
  local rc = slurm_job_submit(job, {}, 0)
  print(n, rc, rc == 0 and job.min_nodes or 0, tostring(job.features))
end
"""


def mixed_site(tmp_path: Path):
    """local.yaml with its second super node grown to 8 nodes: sizes 4 and 8."""
    text = (ROOT / "site-configs" / "local.yaml").read_text()
    assert "nodes: n[4-7]" in text
    (tmp_path / "mixed.yaml").write_text(text.replace("nodes: n[4-7]", "nodes: n[4-11]"))
    return load_site(str(tmp_path / "mixed.yaml"))


def sites(tmp_path: Path):
    out = {name: load_site(str(ROOT / "site-configs" / f"{name}.yaml")) for name in BUNDLED}
    out["mixed"] = mixed_site(tmp_path)
    return out


def test_the_rule():
    classes = [SizeClass(4, 3), SizeClass(18, 2)]
    assert round_up(classes, 3) == Rounded(4, 1)
    assert round_up(classes, 9) == Rounded(4, 3)  # 12 nodes beat one super node of 18
    assert round_up(classes, 13) == Rounded(18, 1)  # 16 on four of 4 does not exist
    assert round_up(classes, 19) == Rounded(18, 2)
    assert round_up(classes, 37) is None and round_up(classes, 0) is None
    assert round_up(classes, 9, multi=False) == Rounded(18, 1)
    ties = [SizeClass(2, 4), SizeClass(4, 2)]
    assert round_up(ties, 4) == Rounded(4, 1)  # same 4 nodes: fewer super nodes
    assert size_classes([18, 4, 18]) == [SizeClass(4, 1), SizeClass(18, 2)]


def _snrun(site, n: int) -> tuple[int, int] | None:
    spec = JobSpec(program="train.py", nodes=n)
    try:
        req = plan_request(spec, site, None)
    except InputError:
        return None
    return req.nodes, req.supernode_size


@pytest.mark.skipif(LUA is None, reason="lua5.1 not installed (apt-get install lua5.1)")
@pytest.mark.parametrize("name", [*BUNDLED, "mixed"])
def test_snrun_and_the_plugin_agree_on_every_node_count(name, tmp_path):
    site = sites(tmp_path)[name]  # the whole rule (small_jobs: aligned has its own tests)
    site = dataclasses.replace(site, slurm=dataclasses.replace(site.slurm, small_jobs="whole"))
    if not site.slurm.supernode_partitions:
        site = dataclasses.replace(
            site, slurm=dataclasses.replace(site.slurm, supernode_partitions=("main",))
        )
    part = site.slurm.supernode_partitions[0]
    classes = size_classes(sn.job_size for sn in site.supernodes)
    top = capacity(classes) + 2
    script = tmp_path / "job_submit.lua"
    script.write_text(export(site, "job-submit-lua"))
    proc = subprocess.run(
        [LUA, "-"],
        input=DRIVER % (lua_str(str(script)), top, lua_str(part)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    multi = site.slurm.strategy in ("block", "switches")
    checked = 0
    for line in proc.stdout.splitlines():
        n_text, rc, nodes, _features = line.split("\t")
        n = int(n_text)
        rule = round_up(classes, n, multi=multi)
        lua = int(nodes) if rc == "0" else None
        assert lua == (rule.total if rule else None), (name, n)
        if rule is not None or round_up(classes, n) is not None:
            # snrun can always use several super nodes (a heterogeneous job on features sites)
            any_ = round_up(classes, n)
            assert _snrun(site, n) == ((any_.total, any_.size) if any_ else None), (name, n)
        checked += 1
    assert checked == top
