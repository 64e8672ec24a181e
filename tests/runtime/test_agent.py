from __future__ import annotations

import pytest

from slurm_supernode.errors import JobError
from slurm_supernode.jobenv import JobEnvironment
from slurm_supernode.placement.model import Layout
from slurm_supernode.placement.rankmap import build_rank_map
from slurm_supernode.runtime.agent_plan import RANK_ENTRY, master_port, plan_agent_launch
from slurm_supernode.runtime.agent_step import srun_command
from tests.placement.sites import ascend_site, make_site, reversed_names
from tests.runtime.inputs import make_inputs


def allocation_hosts(environ: dict[str, str]) -> list[str]:
    return JobEnvironment.from_environ(environ).hosts()


INPUTS = make_inputs()


def test_het_job_allocation_is_the_union_of_components() -> None:
    env = {
        "SLURM_HET_SIZE": "2",
        "SLURM_JOB_NODELIST": "n[0-3]",
        "SLURM_JOB_NODELIST_HET_GROUP_0": "n[4-7]",
        "SLURM_JOB_NODELIST_HET_GROUP_1": "n[0-3]",
    }
    assert sorted(allocation_hosts(env)) == [f"n{i}" for i in range(8)]
    assert allocation_hosts({"SLURM_JOB_NODELIST": "n[2-3]"}) == ["n2", "n3"]
    assert allocation_hosts({"SNRUN_NODELIST": "n7", "SLURM_JOB_NODELIST": "n1"}) == ["n7"]
    with pytest.raises(JobError, match="inside a Slurm job"):
        allocation_hosts({})


def test_every_node_gets_its_rank_devices_and_the_same_master() -> None:
    site = make_site(2, 2, 8, 2, namer=reversed_names(2, 2))
    hosts = [n.hostname for n in site.nodes]
    rm = build_rank_map(site, sorted(hosts), Layout(tp=4), 4)
    launches = [
        plan_agent_launch(INPUTS, site, rm, h, {"PATH": "/bin"}, attempt=1, job_id=42)
        for h in hosts
    ]
    assert sorted(x.node_rank for x in launches) == [0, 1, 2, 3]
    masters = {a for x in launches for a in x.argv if a.startswith("--master-addr=")}
    assert masters == {f"--master-addr={rm.nodes[0].hostname}"}
    first = next(x for x in launches if x.node_rank == 0)
    # interleaved islands (0,2,4,6 / 1,3,5,7): the 4 ranks of a TP group share one island
    assert first.env["CUDA_VISIBLE_DEVICES"] == "0,2,4,6"
    assert first.argv[-3:] == ["train.py", "--x", "a b"]
    assert f"--master-port={master_port(42, 1)}" in first.argv
    assert "--nproc-per-node=4" in first.argv and "--nnodes=4" in first.argv
    assert first.env["SNRUN_SUPERNODE"] == rm.nodes[0].supernode
    with pytest.raises(JobError, match="not part of the rank map"):
        plan_agent_launch(INPUTS, site, rm, "elsewhere", {}, attempt=0, job_id=1)


def test_fork_workers_runs_the_script_by_path_in_forked_workers() -> None:
    """--fork-workers: torchrun gets --run-path --start-method=fork before the script, whose
    path is made absolute against the job's workdir; plain launches are unchanged."""
    site = make_site(1, 2, 8, 2)
    rm = build_rank_map(site, [n.hostname for n in site.nodes])
    host = site.nodes[0].hostname
    forked = make_inputs(fork_workers=True, workdir="/home/u/proj")
    launch = plan_agent_launch(forked, site, rm, host, {}, attempt=0, job_id=1)
    i = launch.argv.index("--run-path")
    assert launch.argv[i:] == [
        "--run-path", "--start-method=fork", RANK_ENTRY, "/home/u/proj/train.py", "--x", "a b",
    ]  # fmt: skip
    assert launch.env["PYTHONUNBUFFERED"] == "1"
    assert launch.env["PYTORCH_NVML_BASED_CUDA_CHECK"] == "1"  # torchrun must not init CUDA
    absolute = make_inputs(fork_workers=True, workdir="/home/u/proj", program_argv=("/opt/t.py",))
    launch = plan_agent_launch(absolute, site, rm, host, {}, attempt=0, job_id=1)
    assert launch.argv[-1] == "/opt/t.py"
    plain = plan_agent_launch(INPUTS, site, rm, host, {}, attempt=0, job_id=1)
    assert "--run-path" not in plain.argv and "PYTHONUNBUFFERED" not in plain.env


def test_ascend_uses_ascend_visible_devices() -> None:
    site = ascend_site(1, 2)
    rm = build_rank_map(site, [n.hostname for n in site.nodes])
    launch = plan_agent_launch(INPUTS, site, rm, site.nodes[1].hostname, {}, attempt=0, job_id=1)
    assert "ASCEND_RT_VISIBLE_DEVICES" in launch.env and "CUDA_VISIBLE_DEVICES" not in launch.env


def test_srun_spans_every_het_component(tmp_path) -> None:
    cmd = srun_command("py", tmp_path, ["n0", "n1", "n4", "n5"], 2, ["t.py", "a"])
    assert "--het-group=0,1" in cmd and cmd[-3:] == ["--", "t.py", "a"]
    plain = srun_command("py", tmp_path, ["n0", "n1"], 0, [])
    assert "--nodes=2" in plain and "--ntasks=2" in plain and "--" not in plain
