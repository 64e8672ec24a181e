"""snrun on the real local cluster: whole super nodes, placement, quoting, Slurm errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm_supernode.slurm.job_lookup import job_info
from tests.integration.helpers import EXAMPLES, snrun, submit, wait_final

pytestmark = pytest.mark.slurm
HOSTILE = ["a b", "$(touch /tmp/snrun-pwned)", "`id`", "it's", 'say "hi"', "line1\nline2", "*"]


def test_two_supernodes_every_rank_matches_the_plan(slurm_cluster, tmp_path: Path) -> None:
    name = "we'ird\"$(x)`y`"
    job_id, job_dir = submit(
        "-S",
        "2",
        "--nproc-per-node",
        "1",
        "-J",
        name,
        "-t",
        "5",
        str(EXAMPLES / "check_ranks.py"),
        *HOSTILE,
        jobs=tmp_path / "jobs",
    )
    final = wait_final(job_dir)
    assert final["state"] == "COMPLETED", final
    result = json.loads((job_dir / "result.json").read_text())
    assert result["ok"] and result["world_size"] == 8 and result["all_reduce"] == 36
    ranks = sorted(result["ranks"], key=lambda r: r["rank"])
    assert [r["host"] for r in ranks] == [f"n{i}" for i in range(8)]  # physical order
    assert [r["supernode"] for r in ranks] == ["sn0"] * 4 + ["sn1"] * 4
    for r in ranks:
        assert r["argv"] == HOSTILE  # every argument arrived literally
    assert not Path("/tmp/snrun-pwned").exists()
    # the plan printed by `snrun plan` for this allocation is what the ranks saw
    plan = json.loads(
        snrun(
            "plan",
            "--nodelist",
            "n[0-7]",
            "--nproc-per-node",
            "1",
            "--json",
            jobs=tmp_path / "jobs",
        ).stdout
    )
    assert [(x["rank"], x["hostname"]) for x in plan["ranks"]] == [
        (r["rank"], r["host"]) for r in ranks
    ]
    info = job_info(job_id)
    assert info is not None and info.name == name  # the job name reached Slurm literally


def test_one_supernode_job_lands_inside_one_supernode(slurm_cluster, tmp_path: Path) -> None:
    out = snrun(
        "-N",
        "3",
        "--nproc-per-node",
        "1",
        "--parsable",
        str(EXAMPLES / "check_ranks.py"),
        jobs=tmp_path / "jobs",
    )
    assert "rounded -N 3 up to 4 nodes" in out.stderr
    job_dir = (tmp_path / "jobs" / "by-id" / out.stdout.strip()).resolve()
    assert wait_final(job_dir)["state"] == "COMPLETED"
    result = json.loads((job_dir / "result.json").read_text())
    hosts = {r["host"] for r in result["ranks"]}
    assert len(hosts) == 4
    assert hosts in ({"n0", "n1", "n2", "n3"}, {"n4", "n5", "n6", "n7"})


def test_slurm_errors_come_back_as_one_line(slurm_cluster, tmp_path: Path) -> None:
    script = str(EXAMPLES / "check_ranks.py")
    bad_part = snrun("-p", "nope", script, jobs=tmp_path / "jobs", check=False)
    assert bad_part.returncode == 2
    assert bad_part.stderr.strip().splitlines() == [
        "snrun: error: -p/--partition: partition 'nope' does not exist (hint: valid: debug, main)"
    ]
    bad_gres = snrun("--sbatch=--gres=bogus:1", script, jobs=tmp_path / "jobs", check=False)
    assert bad_gres.returncode == 1
    lines = bad_gres.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("snrun: error: sbatch")
    assert "Traceback" not in bad_gres.stderr
    too_big = snrun("-S", "3", script, jobs=tmp_path / "jobs", check=False)
    assert too_big.returncode == 2 and "has only 2" in too_big.stderr
