"""User paths at rack scale: 144 nodes, 8 super nodes of 18 trays (16 used + 2 spare).

Real jobs on the real cluster, kept tiny for a 2-core machine: most jobs run one shell task per
node; the requeue and doctor tests run gloo with one rank per node on one super node (torch on
all 128 used trays at once needs ~40 GB, see docs/benchmarks.md "Rack scale").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ClusterShell.NodeSet import NodeSet

from slurm_supernode.bench.submit import BenchJob, plan_bench
from slurm_supernode.launch.facts import gather_facts
from slurm_supernode.launch.job import write_job_dir
from slurm_supernode.site.loader import load_site
from slurm_supernode.slurm import jobs, nodes
from tests.integration.helpers import EXAMPLES, attempts, ledger, pythonpath, submit, wait_final

pytestmark = [pytest.mark.slurm, pytest.mark.scale]
ROOT = Path(__file__).resolve().parents[3]
LAUNCH = Path(__file__).with_name("launch_nodes.j2")
USED = 16  # trays a job takes of a super node: 18 minus the 2 spares


def snrun_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": pythonpath()}
    env.pop("SNRUN_BENCH_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "slurm_supernode", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def own_site(rack, tmp_path: Path, extra: str = "") -> Path:
    """The cluster's site with jobs, results and state under tmp_path (plus ``extra`` YAML)."""
    text = rack.site_file.read_text()
    text = text.replace("jobs_dir: ~/.snrun/jobs", f"jobs_dir: {tmp_path}/jobs")
    text = text.replace("results_db: ~/.snrun/bench.sqlite", f"results_db: {tmp_path}/r.sqlite")
    path = tmp_path / "site.yaml"
    path.write_text(text + extra)
    return path


def allocation(job_id: int) -> list[jobs.JobInfo]:
    """The job's record, or every component's of a heterogeneous job (ids job_id, +1, ...)."""
    first = jobs.wait_for(job_id, set(), 240)
    parts = [first]
    while True:
        nxt = jobs.job_info(job_id + len(parts))
        if nxt is None or not (nxt.name == first.name and nxt.work_dir == first.work_dir):
            return parts
        parts.append(jobs.wait_for(nxt.job_id, set(), 240))


def by_supernode(rack, hosts) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for h in hosts:
        out.setdefault(rack.supernode_of(h), set()).add(h)
    return out


@pytest.mark.parametrize("k", [4, 8])
def test_snrun_k_supernodes_gets_k_whole_supernodes_of_16_trays(rack, tmp_path, k):
    """Tree: a heterogeneous job of k components; block: -N 16k --segment=16. Either way every
    super node gives exactly its 16 used trays, and each node's task sees its own address."""
    site = own_site(rack, tmp_path)
    dry = json.loads(
        snrun_cli(
            "--site",
            str(site),
            "-S",
            str(k),
            "--nproc-per-node",
            "1",
            "--dry-run",
            "--json",
            str(EXAMPLES / "check_ranks.py"),
        ).stdout
    )
    req = dry["request"]
    args = " ".join(req["sbatch_args"])
    assert (req["nodes"], req["supernode_size"], req["supernodes"]) == (USED * k, USED, k)
    if rack.cluster.topology == "block":
        assert f"--segment={USED}" in args and f"--nodes={USED * k}" in args, args
    else:
        assert req["heterogeneous"] and args.count(f"--nodes={USED}") == k, args
    job_id, job_dir = submit(
        "--site",
        str(site),
        "-S",
        str(k),
        "--nproc-per-node",
        "1",
        "-t",
        "5",
        "--template-block",
        f"launch={LAUNCH}",
        str(EXAMPLES / "check_ranks.py"),
        jobs=tmp_path / "jobs",
    )
    parts = allocation(job_id)
    assert all(p.state.base == "COMPLETED" for p in parts), parts
    if rack.cluster.topology == "block":
        assert len(parts) == 1  # one job, segments keep the super nodes whole
    else:
        assert len(parts) == k and all(p.num_nodes == USED for p in parts), parts
    hosts = [h for p in parts for h in NodeSet(p.nodelist)]
    groups = by_supernode(rack, hosts)
    assert len(hosts) == USED * k and len(groups) == k
    assert all(len(g) == USED for g in groups.values()), groups
    seen = dict(
        line.split() for line in (job_dir / "nodes.txt").read_text().splitlines() if line.strip()
    )
    assert set(seen) == set(hosts)  # one task on every node of every component
    for node, addr in seen.items():
        assert addr == rack.cluster.topology_addr(rack.supernode_of(node), node)
    # the plan snrun makes on this allocation keeps TP (4 GPUs) and EP (64 GPUs: 16 trays)
    # groups inside super nodes
    plan = json.loads(
        snrun_cli(
            "plan",
            "--site",
            str(site),
            "--nodelist",
            ",".join(hosts),
            "--nproc-per-node",
            "4",
            "--tp",
            "4",
            "--ep",
            "16",
            "--json",
        ).stdout
    )
    assert plan["groups"]["tp"]["crossings"]["supernode"] == 0
    assert plan["groups"]["ep"]["crossings"]["supernode"] == 0


def plain_sbatch(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sbatch", "--parsable", "-o", "/dev/null", "-t", "2", *args],
        input="#!/bin/bash\ntrue\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )


# (sbatch args, super nodes the job gets (0: refused), what the user is told)
SIZE_CLASSES = [
    (["-N1"], 1, "-N 1 became -N 16"),
    (["-N3"], 1, "-N 3 became -N 16"),
    (["--gpus=40"], 1, "became -N 16"),  # 40 GPUs / 4 per tray = 10 trays
    (["-N16"], 1, None),  # exactly the used trays of one super node: unchanged
    (["-N17"], 2, "2 super nodes"),  # one over: two super nodes (or refused, see below)
    (["-N100"], 7, "7 super nodes"),
    (["-N128"], 8, None),  # 8 x 16: no rounding, so no note (block) or refused (tree)
    (["-N129"], 0, "can never fit; ask for at most 128 nodes"),
]


@pytest.mark.parametrize(("args", "k", "said"), SIZE_CLASSES, ids=lambda v: str(v))
def test_job_submit_lua_rounds_every_size_class_to_whole_supernodes(rack, tmp_path, args, k, said):
    if not rack.lua:
        pytest.fail("the scale cluster runs without job_submit.lua (hint: make test-scale)")
    proc = plain_sbatch(tmp_path, *args)
    strategy = rack.site.slurm.strategy
    if strategy == "auto":  # the plugin decides from the running topology, as snrun does
        strategy = "block" if rack.cluster.topology == "block" else "features"
    if k > 1 and strategy not in ("block", "switches"):
        # a plain job gets one allocation: on a features/auto site the plugin sends it to snrun
        assert proc.returncode != 0 and f"Use 'snrun -S {k}'" in proc.stderr, proc.stderr
        return
    if k == 0:
        assert proc.returncode != 0 and said in proc.stderr, proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    if said:
        assert said in proc.stderr, proc.stderr
    else:
        assert " became " not in proc.stderr, proc.stderr  # nothing rounded
    job_id = jobs.parse_job_id(proc.stdout)
    info = jobs.wait_for(job_id, set(), 120)
    assert (info.state.base, info.num_nodes) == ("COMPLETED", USED * k), info
    groups = by_supernode(rack, NodeSet(info.nodelist))
    assert len(groups) == k, groups
    if "neither set nor see --segment" not in proc.stderr:
        # 24.11's plugin cannot set --segment (it says so): the job gets 16k nodes in an
        # aligned aggregate of k blocks, not necessarily 16 of each; elsewhere 16 of each
        assert all(len(g) == USED for g in groups.values()), groups


def test_a_super_node_feature_in_the_constraint_passes_unchanged(rack, tmp_path):
    proc = plain_sbatch(tmp_path, "-N3", "--constraint=sn5")
    assert proc.returncode == 0 and "snrun job_submit" not in proc.stderr, proc.stderr
    info = jobs.wait_for(jobs.parse_job_id(proc.stdout), set(), 120)
    assert info.num_nodes == 3 and set(NodeSet(info.nodelist)) <= set(rack.supernodes["sn5"])


def test_requeue_swaps_the_failed_tray_for_a_spare_of_the_same_supernode(rack, tmp_path):
    """sn3's tray n57 has no devices (its health check fails). The first attempt is put on sn3
    without its last two trays; the preflight finds n57, and the requeue stays on sn3 with a
    spare in n57's place."""
    sn3 = list(rack.supernodes["sn3"])
    bad, spares = sn3[3], sn3[-2:]
    site = own_site(
        rack,
        tmp_path,
        f"\nnode_overrides:\n  - nodes: {bad}\n    gres_file: /nonexistent/nvidia[0-3]\n",
    )
    others = [n for n in rack.cluster.nodes if n not in sn3] + spares
    _, job_dir = submit(
        "--site",
        str(site),
        "-S",
        "1",
        "--nproc-per-node",
        "1",
        "--preflight",
        "-t",
        "10",
        f"--sbatch=--exclude={NodeSet.fromlist(others)}",
        str(EXAMPLES / "train_resumable.py"),
        "--steps",
        "2",
        jobs=tmp_path / "jobs",
        timeout=300,
    )
    final = wait_final(job_dir, 480)
    assert final["state"] == "COMPLETED", final
    ends = attempts(job_dir)
    assert (ends[0]["cause"], ends[0]["exclude"]) == ("health", [bad]), ends
    starts = [r for r in ledger(job_dir) if r["event"] == "attempt_start"]
    first, last = set(NodeSet(starts[0]["nodes"])), set(NodeSet(starts[-1]["nodes"]))
    assert first == set(sn3) - set(spares)
    assert len(last) == USED and last <= set(sn3) and bad not in last
    assert len(last & set(spares)) == 1  # one spare took the failed tray's place
    log = (job_dir / "logs" / f"release-{starts[0]['job_id']}.log").read_text()
    assert "pinned to super node sn3" in log


def test_bench_request_over_eight_supernodes_lands_on_them(rack, tmp_path):
    """`snrun bench submit --supernodes sn[0-7]`: its request (planned exactly as the command
    plans it) through real Slurm gives 8 x 16 trays; the bench itself (256 torch processes)
    does not fit this machine, so a one-task-per-node probe runs in its place."""
    site = own_site(rack, tmp_path)
    dry = snrun_cli(
        "bench",
        "submit",
        "--site",
        str(site),
        "--supernodes",
        "sn[0-7]",
        "--nproc-per-node",
        "1",
        "--backend",
        "gloo",
        "--sizes",
        "1K",
        "--iters",
        "2",
        "--warmup",
        "1",
        "--dry-run",
    )
    assert dry.returncode == 0, dry.stderr
    loaded = load_site(str(site))
    job = BenchJob(supernodes="sn[0-7]", nproc_per_node=1, backend="gloo", sizes="1K", iters=2)
    plan = plan_bench(loaded, job, gather_facts(loaded, required=True), jobs_root=tmp_path)
    write_job_dir(plan)  # the request's --output goes there
    args = list(plan.request.sbatch_args())
    # the command's own script asks Slurm for the same (job paths differ: another job dir)
    assert all(a in dry.stdout for a in args if "/" not in a), (args, dry.stdout[:2000])
    job_id = jobs.submit(
        "#!/bin/bash\nhet=()\n"
        '[ "${SLURM_HET_SIZE:-0}" -gt 1 ] && het=(--het-group="0-$((SLURM_HET_SIZE - 1))")\n'
        'srun "${het[@]}" --ntasks-per-node=1 true\n',
        [*args, "-o", str(tmp_path / "probe-%j.out"), "-t", "2"],
        cwd=tmp_path,
    )
    parts = allocation(job_id)
    assert all(p.state.base == "COMPLETED" for p in parts), parts
    groups = by_supernode(rack, [h for p in parts for h in NodeSet(p.nodelist)])
    assert sorted(groups) == [f"sn{i}" for i in range(8)]
    assert all(len(g) == USED for g in groups.values()), groups


def test_doctor_on_one_18_tray_supernode(rack, tmp_path):
    """The doctor's job on sn2 takes its 16 used trays (a nodelist of all 18 was refused:
    `invalid number of nodes (-N 18-16)`), and the checklist counts them as whole."""
    site = own_site(rack, tmp_path, f"doctor:\n  storage_mb: 2\n  checkpoint_dir: {tmp_path}\n")
    proc = snrun_cli(
        "doctor",
        "--site",
        str(site),
        "--supernodes",
        "sn2",
        "--nproc-per-node",
        "1",
        "--backend",
        "gloo",
        "--iters",
        "2",
        "-t",
        "00:10:00",
        "--json",
        timeout=600,
    )
    assert proc.stdout.startswith("{"), proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    hosts = set(report["hosts"])
    assert len(hosts) == USED and hosts <= set(rack.supernodes["sn2"]), report["hosts"]
    found = {(f["step"], f["check"]): f for s in report["steps"] for f in s["findings"]}
    # 16 of 18 trays is whole (spares): no "partial super nodes" finding (it was a warn)
    whole = found.get(("topology", "whole-supernodes"), {"verdict": "ok"})
    assert whole["verdict"] == "ok", whole
    assert found[("topology", "rank-map")]["verdict"] == "ok", found
    assert found[("device", "devices")]["measured"] == "4 of 4 devices visible"
    assert "there are no GPUs here" in found[("device", "driver")]["measured"]
    assert {s["step"] for s in report["steps"]} >= {"device", "topology", "storage"}


def test_health_sweep_of_a_supernode_drains_exactly_the_bad_tray(rack, tmp_path):
    """`snrun health --drain` on every tray of sn6, as slurmd's HealthCheckProgram runs it
    (one task per node of a job): only the tray without devices is drained, with snrun's
    reason; it is resumed afterwards."""
    sn6 = list(rack.supernodes["sn6"])
    bad = sn6[7]
    site = own_site(
        rack,
        tmp_path,
        f"\nnode_overrides:\n  - nodes: {bad}\n    gres_file: /nonexistent/nvidia[0-3]\n",
    )
    script = (
        "#!/bin/bash\n"
        f"srun --ntasks-per-node=1 --kill-on-bad-exit=0 {sys.executable} -m slurm_supernode"
        f" health --site {site} --drain > {tmp_path}/sweep.out 2>&1\n"
        "exit 0\n"
    )
    try:
        job_id = jobs.submit(
            script,
            [
                "-p",
                "debug",
                "-N",
                str(len(sn6)),
                f"--nodelist={NodeSet.fromlist(sn6)}",
                "-t",
                "5",
                "-o",
                str(tmp_path / "sweep-%j.log"),
            ],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": pythonpath()},
        )
        info = jobs.wait_for(job_id, set(), 240)
        assert info.state.base == "COMPLETED", (info, (tmp_path / "sweep.out").read_text()[-2000:])
        drained = {
            n.name: n.reason for n in nodes.node_infos(str(NodeSet.fromlist(sn6))) if n.drained
        }
        assert list(drained) == [bad], (drained, (tmp_path / "sweep.out").read_text()[-2000:])
        assert drained[bad].startswith("snrun: devices:"), drained
    finally:
        for n in nodes.node_infos(str(NodeSet.fromlist(sn6))):
            if n.drained:
                nodes.resume(n.name)
