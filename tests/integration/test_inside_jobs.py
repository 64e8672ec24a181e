"""See inside jobs on the real local cluster: submission hygiene, logs, status causes, attach,
hang forensics, code snapshots."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from slurm_supernode.slurm.job_lookup import job_info
from tests.integration.helpers import EXAMPLES, attempts, snrun, submit, wait_final, wait_for

pytestmark = pytest.mark.slurm
REPORT = str(EXAMPLES / "ranks_report.py")


def scontrol_field(job_id: int, key: str) -> str:
    out = subprocess.run(
        ["scontrol", "show", "job", "-o", str(job_id)], capture_output=True, text=True, check=True
    ).stdout
    return next(w.split("=", 1)[1] for w in out.split() if w.startswith(key + "="))


def test_missing_script_is_refused_and_nothing_is_submitted(slurm_cluster, tmp_path) -> None:
    jobs = tmp_path / "jobs"
    out = snrun("-S", "1", "no_such_train.py", jobs=jobs, check=False)
    assert out.returncode == 2
    assert (
        out.stderr.strip()
        .splitlines()[-1]
        .startswith("snrun: error: SCRIPT: script 'no_such_train.py' does not exist")
    )
    assert not (jobs / "by-id").exists()


def test_sbatch_time_line_is_honoured_and_the_command_line_wins(slurm_cluster, tmp_path) -> None:
    script = tmp_path / "timed.py"
    script.write_text("#!/usr/bin/env python\n#SBATCH --time=7\nprint('ok')\n")
    job_id, job_dir = submit("-S", "1", "--nproc-per-node", "1", str(script), jobs=tmp_path / "j")
    assert scontrol_field(job_id, "TimeLimit") == "00:07:00"
    job2, _ = submit(
        "-S", "1", "--nproc-per-node", "1", "-t", "3", str(script), jobs=tmp_path / "j"
    )
    assert scontrol_field(job2, "TimeLimit") == "00:03:00"
    assert wait_final(job_dir)["state"] == "COMPLETED"


def test_logs_rank_of_a_two_node_job(slurm_cluster, tmp_path) -> None:
    job_id, job_dir = submit(
        "-N", "2", "--allow-partial", "--nproc-per-node", "2", REPORT, jobs=tmp_path / "jobs"
    )
    assert wait_final(job_dir)["state"] == "COMPLETED"
    one = snrun("logs", str(job_id), "--rank", "3", jobs=tmp_path / "jobs").stdout.splitlines()
    assert one[0].startswith("[rank 3] hello from rank 3 on ")
    assert "[rank 3 err] rank 3 stderr line" in one
    assert all(line.startswith("[rank 3") for line in one), one
    every = snrun("logs", str(job_id), jobs=tmp_path / "jobs").stdout
    for r in range(4):
        assert f"[rank {r}] hello from rank {r}" in every
    assert "[rank 0] version v1 attempt 0" in every
    tail = snrun("logs", str(job_id), "--rank", "0", "--stream", "stdout", "--tail", "1",
                 jobs=tmp_path / "jobs").stdout  # fmt: skip
    assert tail.splitlines() == ["[rank 0] version v1 attempt 0"]


def test_attach_runs_a_command_on_the_named_node(slurm_cluster, tmp_path) -> None:
    jobs = tmp_path / "jobs"
    job_id, job_dir = submit("-S", "1", "--nproc-per-node", "1", REPORT, "--sleep", "60", jobs=jobs)

    def started() -> bool:  # every rank printed its first line (torch imported, group joined)
        outs = list(job_dir.glob("logs/attempt0/*/*/attempt_0/0/stdout.log"))
        return len(outs) == 4 and all("hello" in p.read_text() for p in outs)

    wait_for(started, 90, "ranks running")
    hosts = scontrol_field(job_id, "NodeList")
    node = "n2" if hosts == "n[0-3]" else "n6"
    out = snrun("attach", str(job_id), "--node", node, "--",
                "sh", "-c", "hostname; echo $SLURMD_NODENAME", jobs=jobs)  # fmt: skip
    # the host name where the cluster's slurmd run (a namespaced cluster has its own)
    host = subprocess.run(
        slurm_cluster.inside("hostname"), capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out.stdout.split() == [host, node]
    bad = snrun("attach", str(job_id), "--node", "n99", "--", "hostname", jobs=jobs, check=False)
    assert bad.returncode == 2 and "n99" in bad.stderr
    if shutil.which("py-spy"):
        stacks = snrun("attach", str(job_id), "--py-spy", "--rank", "1", jobs=jobs).stdout
        assert "== rank 1 (local rank 0" in stacks and "main (ranks_report.py" in stacks, stacks
        every = snrun("attach", str(job_id), "--py-spy", jobs=jobs).stdout  # 4 nodes at once
        heads = [line.split()[2] for line in every.splitlines() if line.startswith("== rank ")]
        assert heads == ["0", "1", "2", "3"], every
    snrun("cancel", str(job_id), jobs=jobs)
    # the ranks die of the SIGTERM: the attempt reads as a cancellation, not a preemption
    wait_for(lambda: attempts(job_dir), 60, "the cancelled attempt's end")
    assert attempts(job_dir)[0]["cause"] == "cancelled", attempts(job_dir)
    text = snrun("status", str(job_id), jobs=jobs).stdout
    assert "job cancelled" in text and "SignalException" not in text, text


def test_requeued_job_runs_the_snapshot_after_the_file_was_edited(slurm_cluster, tmp_path) -> None:
    from slurm_supernode.slurm.jobs import requeue

    code = tmp_path / "code"
    code.mkdir()
    script = code / "ranks_report.py"
    shutil.copy(REPORT, script)
    job_id, job_dir = submit(
        "-S", "1", "--nproc-per-node", "1", str(script), "--sleep", "120", "--sleep-attempt", "0",
        jobs=tmp_path / "jobs",
    )  # fmt: skip
    wait_for(lambda: list(job_dir.glob("logs/attempt0/*/*/attempt_0/0/stdout.log")), 60, "start")
    script.write_text(script.read_text().replace('VERSION = "v1"', 'VERSION = "v2"'))
    requeue(job_id)  # the same job id runs again, from the top of its script
    final = wait_final(job_dir, 240)
    assert final["state"] == "COMPLETED", final
    assert job_info(job_id).restart_count >= 1
    log = snrun("logs", str(job_id), "--rank", "0", jobs=tmp_path / "jobs").stdout
    assert "version v1 attempt" in log and "v2" not in log, log
    assert json.loads((job_dir / "snapshot.json").read_text())["kind"] == "copy"
    assert len(attempts(job_dir)) >= 2


def test_rank_stuck_in_a_collective_is_detected_dumped_and_restarted(slurm_cluster, tmp_path):
    """No heartbeat: rank 1 waits in a gloo recv nobody sends, the others in the next
    all-reduce. No output and no CPU for SNRUN_HANG_TIMEOUT: the supervisor dumps every rank's
    stack (py-spy), stops the attempt and restarts it; status points at the dumps."""
    jobs = tmp_path / "jobs"
    job_id, job_dir = submit(
        "-S", "1", "--nproc-per-node", "1", "--env", "SNRUN_HANG_TIMEOUT=30",
        str(EXAMPLES / "train_resumable.py"), "--steps", "6", "--fail-attempt", "0",
        "--fail-mode", "collective", "--no-heartbeat", jobs=jobs,
    )  # fmt: skip
    final = wait_final(job_dir, 300)
    assert final["state"] == "COMPLETED", final
    assert [(a["cause"], a["action"]) for a in attempts(job_dir)][:1] == [("hang", "restart")]
    stacks = job_dir / "logs" / "attempt0" / "stacks"
    dump = (stacks / "rank1.txt").read_text()
    assert "recv (torch/distributed/distributed_c10d.py" in dump, dump
    assert "main (train_resumable.py" in dump
    assert len(list(stacks.glob("rank*.txt"))) == 4  # every rank
    status = snrun("status", str(job_id), jobs=jobs).stdout
    assert f"stacks: {stacks}" in status
