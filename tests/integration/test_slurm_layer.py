"""The Slurm layer against the real local cluster: jobs, exit codes, requeue, nodes."""

from __future__ import annotations

import subprocess
import time

import pytest
from ClusterShell.NodeSet import NodeSet

from slurm_supernode.slurm import job_lookup, jobs, nodes, pyslurm_probe, version

pytestmark = pytest.mark.slurm

TIMEOUT = 30


def run_job(tmp_path, body: str, *args: str) -> int:
    out = tmp_path / "out.txt"
    return jobs.submit(
        f"#!/bin/bash\n{body}\n", ["-o", str(out), "--open-mode=append", *args], cwd=tmp_path
    )


def test_two_node_job_from_scontrol_then_completion_log(tmp_path, slurm_cluster):
    job = run_job(tmp_path, "srun bash -c 'echo $SLURMD_NODENAME'", "-N2", "-J", "two-nodes")
    info = jobs.wait_for(job, set(), TIMEOUT)  # until it ends
    # the controller's record: through pyslurm where it serves this Slurm (25.11), else scontrol
    assert info.source == ("pyslurm" if pyslurm_probe.pyslurm_api() else "scontrol")
    assert (str(info.state), info.exit_code, info.num_nodes) == ("COMPLETED", 0, 2)
    assert info.name == "two-nodes" and info.partition == "main"
    allocated = set(NodeSet(info.nodelist))
    assert len(allocated) == 2 and allocated <= set(slurm_cluster.nodes)
    printed = set((tmp_path / "out.txt").read_text().split())
    assert printed == allocated
    logged = job_lookup.sacct_job_info(job, completion=True)
    assert logged is not None and logged.source == "sacct-c"
    assert (str(logged.state), logged.exit_code, logged.nodelist) == ("COMPLETED", 0, info.nodelist)


# srun returns when its tasks have exited, which can be before slurmctld has processed the
# step's completion (under load: seconds). A batch script that ends first gets its completion
# record written without the step's code (DerivedExitCode 0:0; the controller's record gets 5
# a moment later). So the script waits until the controller no longer lists the step.
STEP_DONE = (
    'for _ in $(seq 600); do scontrol show step "$SLURM_JOB_ID.0" >/dev/null 2>&1 || break; '
    "sleep 0.1; done"
)


def test_failing_job_exit_codes(tmp_path):
    job = run_job(tmp_path, f"srun bash -c 'exit 5'\n{STEP_DONE}\nexit 3")
    info = jobs.wait_for(job, set(), TIMEOUT)
    # The batch shell's code, and the step's (from the completion log where scontrol omits it).
    assert (str(info.state), info.exit_code, info.derived_exit_code) == ("FAILED", 3, 5)
    assert info.reason == "NonZeroExitCode"
    logged = job_lookup.sacct_job_info(job, completion=True)
    assert logged is not None
    assert (str(logged.state), logged.exit_code, logged.derived_exit_code) == ("FAILED", 3, 5)


def test_unknown_job_is_none():
    assert job_lookup.job_info(987654321) is None


def test_cancel_running_job(tmp_path):
    job = run_job(tmp_path, "sleep 300")
    assert jobs.wait_for(job, {"RUNNING"}, TIMEOUT).running
    jobs.cancel(job)
    info = jobs.wait_for(job, set(), TIMEOUT)
    assert str(info.state) == "CANCELLED"
    jobs.cancel(job)  # cancelling an ended job is not an error


def test_signal_to_batch_shell_only(tmp_path):
    ready = tmp_path / "ready"
    body = f"trap 'echo got-usr1; exit 7' USR1\ntouch {ready}\nwhile :; do sleep 0.2; done"
    job = run_job(tmp_path, body)
    jobs.wait_for(job, {"RUNNING"}, TIMEOUT)
    # RUNNING comes before the shell has set its trap: a signal sent then may be lost.
    deadline = time.monotonic() + TIMEOUT
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    jobs.cancel(job, signal="USR1", batch_only=True)
    info = jobs.wait_for(job, set(), TIMEOUT)
    assert (str(info.state), info.exit_code) == ("FAILED", 7)
    assert "got-usr1" in (tmp_path / "out.txt").read_text()


def test_requeue_and_release_runs_again_at_once(tmp_path):
    job = run_job(tmp_path, "echo restart=$SLURM_RESTART_COUNT\nsleep 300", "-N2")
    assert jobs.wait_for(job, {"RUNNING"}, TIMEOUT).restart_count == 0
    jobs.requeue(job)
    # Without the release the job would wait 120 s (Reason=BeginTime).
    info = jobs.wait_for(job, {"RUNNING"}, 15, poll=0.2)
    assert info.running and info.restart_count == 1
    jobs.cancel(job)
    jobs.wait_for(job, set(), TIMEOUT)
    lines = (tmp_path / "out.txt").read_text().split()
    assert "restart=1" in lines


def test_requeue_hold_stays_pending(tmp_path):
    job = run_job(tmp_path, "sleep 300")
    jobs.wait_for(job, {"RUNNING"}, TIMEOUT)
    jobs.requeue(job, hold=True)
    info = jobs.wait_for(job, {"PENDING"}, TIMEOUT, poll=0.2)
    assert info.pending and info.restart_count == 1
    jobs.cancel(job)


def test_update_job_changes_a_field(tmp_path):
    job = run_job(tmp_path, "true", "--hold")
    jobs.update_job(job, TimeLimit="7", Comment="set by test")
    out = subprocess.run(
        ["scontrol", "show", "job", "-o", str(job)], capture_output=True, text=True, check=True
    ).stdout
    assert "TimeLimit=00:07:00" in out and "Comment=set by test" in out
    jobs.cancel(job)


def test_drain_and_resume_a_real_node(slurm_cluster):
    node = slurm_cluster.nodes[-1]
    reason = "snrun test: drain, then resume"
    nodes.drain([node], reason)
    try:
        (info,) = nodes.node_infos(node)
        assert info.drained and not info.usable and info.reason == reason
    finally:
        (back,) = nodes.resume(node)
    # usable at once, no stale reason (24.11 keeps it unless cleared; 22.05 drops it)
    assert back.usable and back.reason is None
    (info,) = nodes.node_infos([node])
    assert info.usable and not info.drained and info.reason is None


def test_node_and_partition_infos(slurm_cluster):
    infos = nodes.node_infos()
    assert tuple(n.name for n in infos) == slurm_cluster.nodes
    by_feature: dict[str, set[str]] = {}
    for n in infos:
        assert n.gres and n.gres.startswith("gpu:") and n.cpus > 0
        assert set(n.partitions) == {"main", "debug"}
        for f in n.features:
            by_feature.setdefault(f, set()).add(n.name)
    assert {k: set(v) for k, v in slurm_cluster.supernodes.items()} == by_feature
    parts = {p.name: p for p in nodes.partition_infos()}
    assert parts["main"].default and not parts["debug"].default
    assert set(NodeSet(parts["main"].nodes)) == set(slurm_cluster.nodes)
    assert parts["debug"].total_nodes == len(slurm_cluster.nodes)


def test_version_and_features_match_the_daemons(slurm_cluster):
    """Detection agrees with the daemons that run (on the host or inside the cluster's
    namespaces) and with the topology the controller lists (switches or blocks)."""
    daemon = subprocess.run(
        slurm_cluster.inside("slurmctld", "-V"), capture_output=True, text=True
    ).stdout
    feats = version.detect_features()
    assert feats.version == version.parse_version(daemon)
    if slurm_cluster.topology == "block":  # topology/block, or topology.yaml (26.05: "flat")
        assert feats.has_block, feats
    else:
        assert feats.topology_plugin == "topology/tree" and not feats.has_block
    assert feats.select_type == "select/cons_tres"
