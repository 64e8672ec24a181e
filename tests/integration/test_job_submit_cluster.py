"""job_submit.lua inside the real slurmctld (JobSubmitPlugins=lua): plain sbatch in a super node
partition lands on a whole super node, an impossible request is refused at submit with the
plugin's message, another partition is untouched, snrun's own heterogeneous job passes as is.

Uses the default local cluster when it already runs the plugin; otherwise boots a second one
with the plugin in its own state dir and ports (the default cluster is never restarted)."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ClusterShell.NodeSet import NodeSet

from slurm_supernode.launch.facts import gather_facts
from slurm_supernode.launch.jobspec import JobSpec
from slurm_supernode.launch.request import plan_request
from slurm_supernode.site.export import export
from slurm_supernode.site.loader import load_site
from slurm_supernode.slurm import jobs
from slurm_supernode.slurm.nodes import node_infos

pytestmark = pytest.mark.slurm

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 30
OWN = {
    "SNRUN_MC_DIR": "/tmp/snrun-mc-lua-pytest",
    "SNRUN_MC_CTLD_PORT": "6927",
    "SNRUN_MC_SLURMD_PORT": "17200",
}


def _minicluster(cluster, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **OWN}
    env.pop("SLURM_CONF", None)
    cmd = ["bash", str(cluster.minicluster), *args]
    if args[0] == "up":
        cmd += [*cluster.up_args, "--job-submit-lua"]
    else:
        cmd += cluster.mc_args
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.fixture(scope="module")
def lua_conf(slurm_cluster) -> Iterator[Path]:
    """slurm.conf of a cluster running job_submit/lua; SLURM_CONF points at it meanwhile."""
    booted = False
    if "JobSubmitPlugins=lua" in slurm_cluster.conf.read_text().splitlines():
        conf = slurm_cluster.conf
    else:
        up = _minicluster(slurm_cluster, "up")
        if up.returncode != 0:
            pytest.fail(f"lua minicluster up failed: {up.stderr.strip()}", pytrace=False)
        booted = True
        conf = Path(OWN["SNRUN_MC_DIR"]) / "etc" / "slurm.conf"
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(conf)
    try:
        yield conf
    finally:
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old
        if booted:
            _minicluster(slurm_cluster, "down")


def sbatch(tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sbatch", "--parsable", "-o", "/dev/null", *args],
        input="#!/bin/bash\ntrue\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )


def supernodes_of(nodelist: str) -> set[str]:
    return {f for n in node_infos(nodelist) for f in n.features}


def test_plain_sbatch_is_rounded_up_to_one_whole_super_node(lua_conf, tmp_path):
    proc = sbatch(tmp_path, "-N3")
    assert proc.returncode == 0, proc.stderr
    assert "-N 3 became -N 4" in proc.stderr  # the plugin's note reaches the user
    info = jobs.wait_for(jobs.parse_job_id(proc.stdout), set(), TIMEOUT)
    assert (str(info.state), info.partition, info.num_nodes) == ("COMPLETED", "main", 4)
    features = supernodes_of(info.nodelist)
    assert len(features) == 1  # one super node ...
    (feature,) = features
    everyone = {n.name for n in node_infos() if feature in n.features}
    assert set(NodeSet(info.nodelist)) == everyone  # ... and all of it


def test_impossible_request_is_refused_at_submit(lua_conf, tmp_path):
    proc = sbatch(tmp_path, "-N9")
    assert proc.returncode != 0 and not proc.stdout.strip()
    assert "can never fit" in proc.stderr and "at most 8 nodes" in proc.stderr
    assert "Node count specification invalid" in proc.stderr


def test_other_partition_is_untouched(lua_conf, tmp_path):
    proc = sbatch(tmp_path, "-p", "debug", "-N3")
    assert proc.returncode == 0, proc.stderr
    assert "snrun job_submit" not in proc.stderr
    info = jobs.wait_for(jobs.parse_job_id(proc.stdout), set(), TIMEOUT)
    assert (str(info.state), info.partition, info.num_nodes) == ("COMPLETED", "debug", 3)


def test_snrun_heterogeneous_job_passes_unchanged(lua_conf, tmp_path):
    site = load_site(str(ROOT / "site-configs" / "local.yaml"))
    req = plan_request(JobSpec(program="train.py", supernodes=2, time="5"), site, None)
    assert req.heterogeneous and len(req.components) == 2
    proc = subprocess.run(
        ["sbatch", "--parsable", *req.sbatch_args()],
        input="#!/bin/bash\ntrue\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "snrun job_submit" not in proc.stderr
    first = jobs.parse_job_id(proc.stdout)
    infos = [jobs.wait_for(first + i, set(), TIMEOUT) for i in range(2)]
    assert all(i.state.base == "COMPLETED" and i.num_nodes == 4 for i in infos), infos
    got = [supernodes_of(i.nodelist) for i in infos]
    assert all(len(g) == 1 for g in got) and got[0] != got[1]


def test_snrun_request_over_two_super_nodes_passes_on_the_running_topology(
    lua_conf, slurm_cluster, tmp_path
):
    """The cluster's site says `strategy: auto` (as the minicluster writes it on tree and
    block): snrun decides from the running Slurm, and so must the plugin, which reads the
    topology of the slurmctld that loaded it. On topology/block snrun's `-N 8 --segment=4` and
    a plain `sbatch -N5` get through (24.11's plugin cannot see --segment: before, it refused
    both as a plain job over two super nodes); on tree a plain -N5 is sent to `snrun -S 2` and
    snrun's heterogeneous job passes."""
    site = load_site(str(lua_conf.parent / "site.yaml"))
    # topology.yaml: the exporter makes the site's strategy the cluster default (gen-shape)
    yaml = slurm_cluster.topology_option == "yaml"
    assert site.slurm.strategy == ("block" if yaml else "auto")
    spec = JobSpec(program="train.py", supernodes=2, time="5", job_name="auto-k2")
    req = plan_request(spec, site, gather_facts(site, required=True))
    block = slurm_cluster.topology == "block"
    assert req.strategy == ("block" if block else "features"), req
    proc = sbatch(tmp_path, *req.sbatch_args())
    assert proc.returncode == 0, proc.stderr
    first = jobs.parse_job_id(proc.stdout)
    infos = [jobs.wait_for(first + i, set(), TIMEOUT) for i in range(1 if block else 2)]
    assert all(i.state.base == "COMPLETED" for i in infos), infos
    hosts = [h for i in infos for h in NodeSet(i.nodelist)]
    assert len(hosts) == 8 and len(supernodes_of(str(NodeSet.fromlist(hosts)))) == 2
    plain = sbatch(tmp_path, "-N5")
    if block:
        assert plain.returncode == 0, plain.stderr
        assert "-N 5 became -N 8" in plain.stderr and "--segment=4" in plain.stderr
        info = jobs.wait_for(jobs.parse_job_id(plain.stdout), set(), TIMEOUT)
        assert (info.state.base, info.num_nodes) == ("COMPLETED", 8), info
    else:
        assert plain.returncode != 0 and "Use 'snrun -S 2'" in plain.stderr, plain.stderr


def install_plugin(script: Path, text: str, after: float) -> float:
    """Replace job_submit.lua atomically with an mtime past ``after``: slurmctld loads the
    script again at the next submission when its mtime is newer than the loaded one's."""
    tmp = script.with_name(script.name + ".tmp")
    tmp.write_text(text)
    mtime = max(time.time(), after + 1)
    os.utime(tmp, (mtime, mtime))
    tmp.replace(script)
    return mtime


def test_small_jobs_aligned_keeps_the_size_inside_one_super_node(lua_conf, tmp_path):
    """The plugin exported with `slurm.small_jobs: aligned`: plain -N 3 keeps its 3 nodes, all
    in one super node, with no rounding note; the shipped script (whole) is put back after."""
    script = lua_conf.parent / "job_submit.lua"
    shipped = script.read_text()
    site_text = (lua_conf.parent / "site.yaml").read_text()
    assert "\nslurm:\n" in site_text
    aligned = tmp_path / "aligned.yaml"
    # the site may state small_jobs already (local.yaml keeps whole): replace it, else add it
    text, n = re.subn(r"(?m)^  small_jobs: \w+.*$", "  small_jobs: aligned", site_text, count=1)
    if not n:
        text = site_text.replace("\nslurm:\n", "\nslurm:\n  small_jobs: aligned\n", 1)
    aligned.write_text(text)
    mtime = install_plugin(
        script, export(load_site(str(aligned)), "job-submit-lua"), script.stat().st_mtime
    )
    try:
        proc = sbatch(tmp_path, "-N3")
        assert proc.returncode == 0, proc.stderr
        assert " became " not in proc.stderr, proc.stderr
        info = jobs.wait_for(jobs.parse_job_id(proc.stdout), set(), TIMEOUT)
        assert (info.state.base, info.partition, info.num_nodes) == ("COMPLETED", "main", 3)
        assert len(supernodes_of(info.nodelist)) == 1
    finally:
        install_plugin(script, shipped, mtime)
    back = sbatch(tmp_path, "-N3")
    assert back.returncode == 0 and "-N 3 became -N 4" in back.stderr, back.stderr


def test_up_refuses_to_switch_the_plugin_off_while_running(lua_conf, slurm_cluster):
    env = {**os.environ, "SNRUN_MC_DIR": str(lua_conf.parent.parent)}
    env["SNRUN_MC_JOB_SUBMIT_LUA"] = "0"
    proc = subprocess.run(
        ["bash", str(slurm_cluster.minicluster), "up", *slurm_cluster.up_args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 1
    assert "another shape: job-submit-lua=1" in proc.stderr, proc.stderr
    assert "minicluster down" in proc.stderr


def test_a_refused_update_is_explained_where_this_slurm_can(lua_conf, slurm_cluster, tmp_path):
    """`scontrol update NumNodes=3` of a pending job is refused on every version; Slurm >= 23.02
    shows the plugin's explanation to the user, older ones drop log_user() in job_modify, so
    the explanation (with the job id and the count to use) is in slurmctld's log there, and
    the load line says which (the plugin tells by the running Slurm's error-code table)."""
    proc = sbatch(tmp_path, "-N4", "--hold")
    assert proc.returncode == 0, proc.stderr
    job = jobs.parse_job_id(proc.stdout)
    try:
        update = subprocess.run(
            ["scontrol", "update", f"JobId={job}", "NumNodes=3"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert update.returncode != 0
        assert "Node count specification invalid" in update.stderr, update.stderr
        speaks = slurm_cluster.version >= (23, 2)
        assert ("use NumNodes=4" in update.stderr) == speaks, update.stderr
        log = lua_conf.parent.parent / "log" / "slurmctld.log"
        refused = f"snrun job_submit: job {job} update refused: partition main"
        from tests.integration.helpers import wait_for

        def logged() -> str:
            text = log.read_text(errors="replace")
            return text if refused in text else ""

        text = wait_for(logged, 30, "the refusal in slurmctld's log")
        line = next(ln for ln in text.splitlines() if refused in ln)
        assert "use NumNodes=4" in line
        where = "to the user" if speaks else "in this log only (Slurm < 23.02)"
        assert f"refused updates explained {where}" in text
    finally:
        subprocess.run(["scancel", str(job)], timeout=60, check=False)


def test_a_segment_request_is_checked_where_the_plugin_sees_it(lua_conf, slurm_cluster, tmp_path):
    """From 25.11.2 job_submit/lua reads the job's segment size: a plain `sbatch --segment=S`
    in the enforced partition is checked against the super nodes (the cluster's site says
    `small_jobs: whole`: S is one super node of 4, -N a whole number of segments) and refused
    at submit with what to type; a good one runs as asked. 24.11's plugin has no such field
    (the job is rounded as a plain one): nothing refuses the segment there."""
    from slurm_supernode.slurm.version import slurm_version

    sees = slurm_version() >= (25, 11, 2)
    bad = sbatch(tmp_path, "-N6", "--segment=3")
    if sees:
        assert bad.returncode != 0 and not bad.stdout.strip(), bad
        assert "snrun job_submit: partition main runs jobs on whole super nodes:" in bad.stderr
        assert "--segment=3 does not fit them" in bad.stderr and "Use --segment=4" in bad.stderr
        uneven = sbatch(tmp_path, "-N6", "--segment=4")
        assert uneven.returncode != 0, uneven
        # 26.05's sbatch refuses it itself, before slurmctld and the plugin see it
        said = (
            "-N 6 is not a whole number of --segment=4 segments; use -N 4 or -N 8",
            "node count must be evenly divisible by segment size",
        )
        assert any(s in uneven.stderr for s in said), uneven.stderr
    else:
        assert "does not fit them" not in bad.stderr, bad.stderr
        if bad.returncode == 0:
            subprocess.run(["scancel", bad.stdout.strip()], timeout=60, check=False)
    if slurm_cluster.topology != "block":
        return  # a segment means something to topology/block only
    good = sbatch(tmp_path, "-N8", "--segment=4")
    assert good.returncode == 0, good.stderr
    if sees:  # accepted as it is (24.11: the plugin's note that it cannot see --segment)
        assert "snrun job_submit" not in good.stderr, good.stderr
    info = jobs.wait_for(jobs.parse_job_id(good.stdout), set(), TIMEOUT)
    assert (info.state.base, info.num_nodes) == ("COMPLETED", 8), info
    assert len(supernodes_of(info.nodelist)) == 2
