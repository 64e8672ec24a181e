"""A job whose epilog still runs on one node (COMPLETING) on the real cluster: snrun neither
calls it ended nor takes the nodes Slurm lists then (only the node still completing) for the
job's. The minicluster's epilog holds on NODE while `epilog-delay` (next to slurm.conf) exists,
so every step below waits on what Slurm reports, never on a guessed time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ClusterShell.NodeSet import NodeSet

from slurm_supernode.slurm import job_lookup, jobinfo, jobs
from slurm_supernode.slurm.nodes import node_infos
from tests.integration.helpers import ledger, snrun, submit, wait_final, wait_for
from tests.integration.test_resubmission import TRAIN, site_with_broken_node

pytestmark = pytest.mark.slurm
HELD = "n2"  # in the first attempt's allocation and in the rerun's (it is not the bad node)


def completing(job_id: int) -> jobinfo.JobInfo | None:
    info = job_lookup.job_info(job_id)
    return info if info is not None and info.state.completing else None


def idle(nodes: str) -> bool:
    """No job on these nodes, none completing there (Slurm's node states say so)."""
    return all(n.state == "idle" and "completing" not in n.flags for n in node_infos(nodes))


def starts(job_dir: Path) -> list[dict]:
    return [r for r in ledger(job_dir) if r["event"] == "attempt_start"]


def test_epilog_on_one_node_keeps_the_job_completing(slurm_cluster, tmp_path: Path) -> None:
    """n1 fails its preflight check: the job is requeued without n1 while n2's epilog still
    runs. Neither the release, nor `wait`, nor the ledger, nor `snrun status` take n2 alone
    for the job's nodes, and the job has ended only once n2's epilog is done."""
    delay = slurm_cluster.conf.parent / "epilog-delay"
    # The hold applies to every job that ends on HELD: an earlier test's job still ending there
    # (its epilog, a cancelled chain) would keep the node COMPLETING and this job pending.
    wait_for(lambda: idle("n[0-3]"), 240, "n[0-3] idle: earlier tests' jobs have ended")
    delay.write_text(f"{HELD} 120\n")
    try:
        job_id, job_dir = submit(
            "--site", str(site_with_broken_node(tmp_path, "n1", spares=1)), "-S", "1",
            "--nproc-per-node", "1", "--preflight", "--sbatch=--exclude=n[3-7]",
            TRAIN, "--steps", "2", jobs=tmp_path / "jobs",
        )  # fmt: skip
        wait_for(lambda: any(r["event"] == "requeued" for r in ledger(job_dir)), 120, "requeue")
        info = wait_for(lambda: completing(job_id), 60, "the requeued run COMPLETING")
        assert not info.running and info.nodelist is None and not info.ended
        assert len(starts(job_dir)) == 1  # the rerun waits for the epilog
        delay.unlink()
        wait_for(lambda: len(starts(job_dir)) == 2, 120, "the rerun")
        delay.write_text(f"{HELD} 120\n")
        final = wait_final(job_dir, 240)
        assert final["state"] == "COMPLETED", final
        info = wait_for(lambda: completing(job_id), 60, "the job COMPLETING")
        assert info.state.base in ("COMPLETED", "UNKNOWN")  # 22.05's text form hides it
        assert info.nodelist is None and not info.ended
        with pytest.raises(jobs.WaitTimeout):
            jobs.wait_for(job_id, set(), timeout=2)  # not ended while the epilog runs
        first, rerun = (set(NodeSet(s["nodes"])) for s in starts(job_dir))
        assert first == {"n0", "n1", "n2"} and rerun == {"n0", "n2", "n3"}
        (requeued,) = [r for r in ledger(job_dir) if r["event"] == "requeued"]
        assert requeued["exclude"] == ["n1"]
        status = json.loads(snrun("status", str(job_id), "--json", jobs=tmp_path / "jobs").stdout)
        assert status["state"] == "COMPLETED"
        assert [set(NodeSet(a["nodes"])) for a in status["attempts"]] == [first, rerun]
        delay.unlink()
        info = jobs.wait_for(job_id, set(), timeout=60)
        assert info.ended and set(NodeSet(info.nodelist or "")) == rerun
    finally:
        delay.unlink(missing_ok=True)
