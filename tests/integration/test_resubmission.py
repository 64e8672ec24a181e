"""Fault injection on the real local cluster: snrun's supervisor restarts, requeues, stops."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from slurm_supernode.runtime.agent_plan import RANK_ENTRY
from slurm_supernode.slurm.job_lookup import job_info
from tests.integration.helpers import (
    EXAMPLES,
    attempts,
    ledger,
    snrun,
    submit,
    wait_final,
    wait_for,
)

pytestmark = pytest.mark.slurm
TRAIN = str(EXAMPLES / "train_resumable.py")


def resumed_steps(log: str) -> list[int]:
    """The step each attempt of train_resumable.py started at, in log order. Searched, not
    read per line: torchrun's --tee threads copy each rank's file line by line with
    readline(), which hands over a line still being written, so a rank's line can run into
    another's ("...starting at step 0[default0]:...")."""
    return [int(step) for step in re.findall(r"starting at step (\d+)", log)]


def step_of(heartbeat: Path) -> int:
    """The step the training script last reported ("step N attempt A"), 0 before any."""
    try:
        return int(heartbeat.read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def processes_on(node: str, job_id: str) -> list[int]:
    """PIDs of the job's tasks that Slurm started on ``node`` (on the local cluster every node
    is this host; the tasks' environment says which node they belong to)."""
    wanted = {f"SLURMD_NODENAME={node}".encode(), f"SLURM_JOB_ID={job_id}".encode()}
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = set((entry / "environ").read_bytes().split(b"\0"))
        except OSError:
            continue
        if wanted <= env:
            pids.append(int(entry.name))
    return pids


def site_with_broken_node(tmp_path: Path, node: str, spares: int = 0) -> Path:
    """local.yaml whose ``node`` points at no device files (its health check fails), with
    ``spares`` spare nodes per super node."""
    text = (Path(__file__).resolve().parents[2] / "site-configs" / "local.yaml").read_text()
    if spares:
        for nodes in ("n[0-3]", "n[4-7]"):
            text = text.replace(
                f"    nodes: {nodes}\n", f"    nodes: {nodes}\n    spares: {spares}\n"
            )
    site = tmp_path / "site.yaml"
    site.write_text(
        text + f"\nnode_overrides:\n  - nodes: {node}\n    gres_file: /nonexistent/nvidia[0-7]\n"
    )
    return site


def submit_preflight(tmp_path: Path, site: Path, exclude: str) -> Path:
    """A 4-step job with --preflight, kept off ``exclude`` for its first attempt; waits for the
    chain to complete and returns its job dir."""
    _, job_dir = submit(
        "--site", str(site), "-S", "1", "--nproc-per-node", "1", "--preflight",
        f"--sbatch=--exclude={exclude}", TRAIN, "--steps", "4", jobs=tmp_path / "jobs",
    )  # fmt: skip
    final = wait_final(job_dir, 240)
    assert final["state"] == "COMPLETED", final
    return job_dir


def run_chain(tmp_path: Path, *args: str, timeout: float = 240) -> tuple[int, Path, dict]:
    job_id, job_dir = submit("-S", "1", "--nproc-per-node", "2", *args, jobs=tmp_path / "jobs")
    return job_id, job_dir, wait_final(job_dir, timeout)


def test_rank_exits_1_first_attempt_then_restart_in_allocation_succeeds(
    slurm_cluster, tmp_path: Path
) -> None:
    job_id, job_dir, final = run_chain(tmp_path, TRAIN, "--steps", "8", "--fail-attempt", "0")
    assert final["state"] == "COMPLETED", final
    ends = attempts(job_dir)
    assert [(a["cause"], a["action"]) for a in ends] == [
        ("app_error", "restart"),
        ("success", "complete"),
    ]
    assert {a["job_id"] for a in ends} == {job_id}  # same allocation, no requeue
    # per-rank exit codes from torchrun's report reach the ledger. The injected rank 1 exits 1,
    # and its peers then fail with 1 too; which of a node's ranks torchrun's report names first
    # depends on timing (a CI run saw rank 0 named on rank 1's node), so any rank's exit 1 counts.
    ranks = [x for r in ledger(job_dir) if r["event"] == "node_exit" for x in r.get("ranks", [])]
    assert any(x["exit_code"] == 1 and x["rank"] in range(8) for x in ranks), ranks
    assert sum(x["first"] for x in ranks) >= 1
    status = snrun("status", str(job_id), jobs=tmp_path / "jobs").stdout
    assert "app_error" in status and "COMPLETED" in status and "[rank " in status


def test_fork_workers_restart_in_allocation(slurm_cluster, tmp_path: Path) -> None:
    """--fork-workers: torchrun runs the script in forked workers; a rank's exit code still
    reaches the ledger, the restart stays in the allocation and the rerun completes."""
    job_id, job_dir, final = run_chain(
        tmp_path, "--fork-workers", TRAIN, "--steps", "8", "--fail-attempt", "0"
    )
    assert final["state"] == "COMPLETED", final
    ends = attempts(job_dir)
    causes = [(a["cause"], a["action"]) for a in ends]
    assert causes == [("app_error", "restart"), ("success", "complete")]
    assert {a["job_id"] for a in ends} == {job_id}
    first = [r["exit_code"] for r in ledger(job_dir) if r["event"] == "node_exit"][:4]
    assert 1 in first and 0 not in first, first  # the failing rank's code came through
    records = [json.loads(p.read_text()) for p in (job_dir / "env").glob("*.1.json")]
    assert len(records) == 4
    for rec in records:
        i = rec["argv"].index("--run-path")
        snapshot = str(job_dir / "code" / "train_resumable.py")  # the copy taken at submission
        assert rec["argv"][i : i + 4] == ["--run-path", "--start-method=fork", RANK_ENTRY, snapshot]
    log = "".join(p.read_text() for p in (job_dir / "logs").glob("*.out"))
    assert "attempt 1: done, 8 steps" in log, log[-2000:]


def test_rank_failing_after_the_others_finished_ends_the_attempt_on_every_node(
    slurm_cluster, tmp_path: Path
) -> None:
    """The last rank raises after the last step, when the other nodes' ranks have finished:
    their torchrun would wait 300 s in torchelastic's exit barrier. Fail fast (the default):
    the failing node records first, the supervisor asks the others to stop, each of their
    agents stops its torchrun and records its exit, and the attempt restarts in the
    allocation."""
    job_id, job_dir, final = run_chain(
        tmp_path, "--nproc-per-node", "1", TRAIN, "--steps", "3", "--fail-attempt", "0",
        "--fail-rank", "3", "--fail-step", "3", "--fail-mode", "raise", timeout=200,
    )  # fmt: skip
    assert final["state"] == "COMPLETED", final
    ends = attempts(job_dir)
    causes = [(a["cause"], a["action"]) for a in ends]
    assert causes == [("app_error", "restart"), ("success", "complete")]
    first = [r for r in ledger(job_dir) if r.get("attempt") == 0]
    failing = next(r["node"] for r in first if r["event"] == "rank_failed")
    assert ends[0]["detail"].startswith("rank 3: RuntimeError: injected failure"), ends[0]
    assert f"on {failing}; step ended on every node" in ends[0]["detail"]
    order = [r["event"] for r in first]
    assert order.index("rank_failed") < order.index("stop_requested"), order
    exits = {r["node"]: r for r in first if r["event"] == "node_exit"}
    assert len(exits) == 4, exits  # every agent recorded its node's end
    assert not exits[failing].get("stopped") and exits[failing]["exit_code"] != 0
    stopped = {n: r.get("stopped") for n, r in exits.items() if n != failing}
    assert set(stopped.values()) == {f"{failing} failed first"}, stopped
    assert {a["job_id"] for a in ends} == {job_id}


def test_sigkilled_rank_is_restarted(slurm_cluster, tmp_path: Path) -> None:
    """Rank 1 (2 ranks per node: its node's sibling is stopped by torchrun, its peers' errors
    about the lost connection come first) dies of SIGKILL: the attempt names it, not a peer,
    and the restart completes. Under load torch's fork-mode report can leave the killed rank
    out (its sibling's error seen at the same poll): the agent, which saw it die, records it."""
    _, job_dir, final = run_chain(
        tmp_path, TRAIN, "--steps", "8", "--fail-attempt", "0", "--fail-mode", "kill"
    )
    assert final["state"] == "COMPLETED", final
    ends = attempts(job_dir)
    assert [a["cause"] for a in ends] == ["app_error", "success"]
    assert ends[0]["detail"].startswith("rank 1: killed by "), ends[0]


def test_always_failing_script_stops_with_a_clear_final_state(
    slurm_cluster, tmp_path: Path
) -> None:
    _, job_dir, final = run_chain(
        tmp_path, "--max-restarts", "3", TRAIN, "--steps", "8", "--fail-always"
    )
    assert final["state"] == "FAILED"
    assert "same failure twice at the same point" in final["reason"]
    assert len(attempts(job_dir)) == 2  # stopped early: the budget of 3 was not needed
    _, _, final2 = run_chain(
        tmp_path, "--max-restarts", "1", TRAIN, "--steps", "8", "--fail-always", "--fail-step", "1"
    )
    assert final2["state"] == "FAILED"


def test_time_limit_signal_checkpoints_and_the_next_attempt_resumes(
    slurm_cluster, tmp_path: Path
) -> None:
    job_id, job_dir = submit(
        "-S",
        "1",
        "--nproc-per-node",
        "2",
        "-t",
        "10",
        TRAIN,
        "--steps",
        "60",
        "--step-time",
        "0.25",
        jobs=tmp_path / "jobs",
    )
    info = job_info(job_id)
    heartbeat = job_dir / "heartbeat"
    wait_for(lambda: step_of(heartbeat) >= 5, 120, "progress")
    # What Slurm does at --signal=B:USR2@90 before the time limit, sent now.
    subprocess.run(["scancel", "--batch", "--signal=USR2", str(job_id)], check=True)
    final = wait_final(job_dir, 240)
    assert final["state"] == "COMPLETED", final
    ends = attempts(job_dir)
    assert [(a["cause"], a["action"]) for a in ends[:1]] == [("time_limit", "requeue")]
    assert ends[-1]["cause"] == "success"
    starts = [r for r in ledger(job_dir) if r["event"] == "attempt_start"]
    assert starts[-1]["restart_count"] >= 1  # Slurm requeued the same job id
    log = "".join(p.read_text() for p in (job_dir / "logs").glob("*.out"))
    resumed = resumed_steps(log)
    assert resumed[0] == 0 and resumed[-1] > 0, log[-2000:]
    # started at once, not after Slurm's delay: by Slurm itself (expedite) or by the releaser
    (requeued,) = [r for r in ledger(job_dir) if r["event"] == "requeued"]
    if requeued["how"] == "released":
        release_log = (job_dir / "logs" / f"release-{job_id}.log").read_text()
        assert f"job {job_id} released" in release_log, release_log
    else:
        assert requeued["how"] == "expedite", requeued
    assert info is not None and "--signal=B:USR2@90" in (job_dir / "request.json").read_text()


def test_lost_node_job_resumes_without_that_node(slurm_cluster, tmp_path: Path) -> None:
    """A node is lost under a running job (its slurmd killed, its tasks frozen, as when a host
    stops answering): Slurm marks the node down and requeues the job; the rerun lands on whole
    super nodes without it and resumes from the last checkpoint."""
    job_id, job_dir = submit(
        "-S",
        "1",
        "--nproc-per-node",
        "1",
        TRAIN,
        "--steps",
        "60",
        "--step-time",
        "0.25",
        "--ckpt-every",
        "5",
        jobs=tmp_path / "jobs",
    )
    heartbeat = job_dir / "heartbeat"
    wait_for(lambda: step_of(heartbeat) >= 6, 120, "progress")
    first = next(r for r in ledger(job_dir) if r["event"] == "attempt_start")
    from ClusterShell.NodeSet import NodeSet

    victim = list(NodeSet(first["nodes"]))[-1]  # not the batch host (the first node)
    pid_file = slurm_cluster.state_dir / "run" / f"slurmd-{victim}.pid"
    pid = int(pid_file.read_text().strip())
    frozen = processes_on(victim, str(job_id))
    assert frozen, f"no task of job {job_id} found on {victim}"
    # The pid file holds the PID where slurmd runs (the host, or a namespaced cluster's inside).
    subprocess.run(slurm_cluster.inside("kill", "-9", str(pid)), check=True)
    # Freeze the node's tasks too: the job cannot finish before Slurm's SlurmdTimeout notices the
    # node (a killed slurmd alone leaves the tasks running, and a short job may win that race).
    subprocess.run(["kill", "-STOP", *map(str, frozen)], check=False)
    try:
        final = wait_final(job_dir, 300)
        assert final["state"] == "COMPLETED", final
        ends = attempts(job_dir)
        assert ends[0]["cause"] == "node_failure" and ends[-1]["cause"] == "success"
        starts = [r for r in ledger(job_dir) if r["event"] == "attempt_start"]
        assert victim not in NodeSet(starts[-1]["nodes"])
        assert starts[-1]["restart_count"] >= 1
        log = "".join(p.read_text() for p in (job_dir / "logs").glob("*.out"))
        resumed = resumed_steps(log)
        assert resumed[-1] >= 5, log[-2000:]
    finally:
        subprocess.run(["kill", "-KILL", *map(str, frozen)], check=False, capture_output=True)
        conf = str(slurm_cluster.conf)
        subprocess.run(slurm_cluster.inside("slurmd", "-f", conf, "-N", victim), check=False)
        from slurm_supernode.slurm.nodes import node_infos

        wait_for(
            lambda: node_infos([victim])[0].usable,
            90,
            f"{victim} back",
        )


def test_failed_preflight_health_check_requeues_without_the_node(
    slurm_cluster, tmp_path: Path
) -> None:
    """n3's devices are missing (its site entry points at no device files): with --preflight
    the supervisor finds it before starting torchrun and requeues the job without n3."""
    job_dir = submit_preflight(tmp_path, site_with_broken_node(tmp_path, "n3"), "n[4-7]")
    ends = attempts(job_dir)
    assert (ends[0]["cause"], ends[0]["action"], ends[0]["exclude"]) == (
        "health",
        "requeue",
        ["n3"],
    )
    starts = [r for r in ledger(job_dir) if r["event"] == "attempt_start"]
    from ClusterShell.NodeSet import NodeSet

    assert "n3" not in NodeSet(starts[-1]["nodes"])


def test_requeue_stays_in_the_supernode_when_a_spare_can_replace_the_bad_node(
    slurm_cluster, tmp_path: Path
) -> None:
    """Super nodes with one spare: a 3-node job on sn0 whose n1 fails its preflight check is
    requeued without n1 and pinned to sn0, where the spare n3 replaces it."""
    site = site_with_broken_node(tmp_path, "n1", spares=1)
    job_dir = submit_preflight(tmp_path, site, "n[3-7]")
    ends = attempts(job_dir)
    assert (ends[0]["cause"], ends[0]["exclude"]) == ("health", ["n1"])
    starts = [r for r in ledger(job_dir) if r["event"] == "attempt_start"]
    from ClusterShell.NodeSet import NodeSet

    assert set(NodeSet(starts[0]["nodes"])) == {"n0", "n1", "n2"}
    assert set(NodeSet(starts[-1]["nodes"])) == {"n0", "n2", "n3"}  # same super node, spare n3
    log = (job_dir / "logs" / f"release-{starts[0]['job_id']}.log").read_text()
    assert "pinned to super node sn0" in log


def test_hung_rank_is_stopped_and_restarted(slurm_cluster, tmp_path: Path) -> None:
    """A rank stops making progress (sleeps inside the step): no heartbeat for
    SNRUN_HANG_TIMEOUT seconds, the supervisor stops the step and restarts it."""
    _, job_dir, final = run_chain(
        tmp_path,
        "--env",
        "SNRUN_HANG_TIMEOUT=10",
        TRAIN,
        "--steps",
        "8",
        "--fail-attempt",
        "0",
        "--fail-mode",
        "hang",
        timeout=300,
    )
    assert final["state"] == "COMPLETED", final
    ends = attempts(job_dir)
    assert [(a["cause"], a["action"]) for a in ends] == [
        ("hang", "restart"),
        ("success", "complete"),
    ]


def test_cancel_ends_the_whole_chain(slurm_cluster, tmp_path: Path) -> None:
    job_id, job_dir = submit(
        "-S",
        "1",
        "--nproc-per-node",
        "1",
        TRAIN,
        "--steps",
        "400",
        "--step-time",
        "0.5",
        jobs=tmp_path / "jobs",
    )
    wait_for(lambda: step_of(job_dir / "heartbeat") >= 2, 120, "progress")
    out = snrun("cancel", str(job_id), jobs=tmp_path / "jobs")
    assert f"cancelled job chain {job_dir.name}" in out.stdout
    from slurm_supernode.slurm.jobs import wait_for as wait_job

    assert wait_job(job_id, ["CANCELLED"], timeout=60).state.base == "CANCELLED"

    def status() -> dict:
        out = snrun("status", str(job_id), "--json", jobs=tmp_path / "jobs").stdout
        return json.loads(out)

    final = wait_for(lambda: (s := status())["state"] == "CANCELLED" and s, 60, "CANCELLED")
    assert final["job_ids"] == [job_id]


def test_requeue_uses_expedite_where_the_cluster_has_it_and_still_excludes(
    slurm_cluster, tmp_path: Path
) -> None:
    """What the running cluster says decides: with expedited requeues allowed (26.05 with
    SlurmctldParameters=enable_expedited_requeue) snrun submits --requeue=expedite and a
    requeue that must exclude a node goes held -> exclusions -> release; elsewhere plain
    --requeue and the releaser. Either way the rerun is soon and never on the bad node."""
    from ClusterShell.NodeSet import NodeSet

    from slurm_supernode.slurm.version import detect_features

    expedite = detect_features().expedited_requeue
    job_dir = submit_preflight(tmp_path, site_with_broken_node(tmp_path, "n3"), "n[4-7]")
    args = json.loads((job_dir / "request.json").read_text())["sbatch_args"]
    assert ("--requeue=expedite" in args) is expedite and ("--requeue" in args) is not expedite
    recs = ledger(job_dir)
    (requeued,) = [r for r in recs if r["event"] == "requeued"]
    assert requeued["how"] == ("expedite-held" if expedite else "released")
    assert requeued["exclude"] == ["n3"]
    starts = [r for r in recs if r["event"] == "attempt_start"]
    assert "n3" not in NodeSet(starts[-1]["nodes"]) and starts[-1]["restart_count"] >= 1
    gap = starts[-1]["time"] - requeued["time"]
    print(
        f"requeue -> next attempt: {gap:.1f} s ({requeued['how']}, Slurm {slurm_cluster.version})"
    )
    # Soon means started by snrun's releaser after the exclusions, not by Slurm's own delay
    # (cred_expire): the releaser says what it did (the gap above is for reading, not a test)
    log = (job_dir / "logs" / f"release-{requeued['job_id']}.log").read_text()
    assert ("released from its hold" in log) is expedite and "excluded n3" in log
    assert f"job {requeued['job_id']} released" in log, log
