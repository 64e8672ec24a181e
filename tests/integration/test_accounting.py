"""Job records from accounting on the real local cluster: `sacct --json` where the cluster runs
slurmdbd (a namespaced 24.11/26.05 cluster booted with --accounting, as make test does), the
completion log's text where it does not (the host's 22.05). What is expected follows what the
running cluster says."""

from __future__ import annotations

import time

import pytest

from slurm_supernode.slurm import job_lookup, jobinfo, jobs, pyslurm_probe, version

pytestmark = pytest.mark.slurm

TIMEOUT = 30


def minicluster_accounting(slurm_cluster) -> bool:
    """Did the minicluster start slurmdbd (its shape records `accounting=1`)?"""
    shape = slurm_cluster.state_dir / ("ns/shape" if slurm_cluster.namespaced else "shape")
    return "accounting=1" in shape.read_text().split()


def failing_job(tmp_path, name: str) -> tuple[int, jobinfo.JobInfo]:
    job = jobs.submit(
        # the sleep: slurmctld takes the step's exit code into the job's derived exit code when
        # the step's completion reaches it, which can come after the batch script's end (a race
        # in Slurm seen on 24.11: the completion log then says DerivedExitCode 0)
        "#!/bin/bash\nsrun bash -c 'exit 5'\nsleep 1\nexit 3\n",
        ["-o", str(tmp_path / "out.txt"), "-J", name],
        cwd=tmp_path,
    )
    return job, jobs.wait_for(job, set(), TIMEOUT)  # the controller's record, once ended


def test_the_cluster_says_whether_it_has_accounting(slurm_cluster):
    storage = version.detect_accounting()
    assert (storage == "accounting_storage/slurmdbd") == minicluster_accounting(slurm_cluster)
    assert storage in (None, "accounting_storage/slurmdbd")


def test_ended_job_from_accounting_or_completion_log(tmp_path, slurm_cluster):
    job, ctl = failing_job(tmp_path, "acct-failing")
    controller = "pyslurm" if pyslurm_probe.pyslurm_api() else "scontrol"  # 25.11: pyslurm
    assert (ctl.source, str(ctl.state), ctl.exit_code) == (controller, "FAILED", 3)
    if version.detect_accounting() is None:
        # No accounting: sacct gives no JSON (nor text); the completion log (text) has the job.
        assert job_lookup.sacct_json_job_info(job) is None
        assert job_lookup.sacct_job_info(job, completion=False) is None
        logged = job_lookup.sacct_job_info(job, completion=True)
        assert logged is not None and logged.source == "sacct-c"
        assert (str(logged.state), logged.exit_code, logged.derived_exit_code) == ("FAILED", 3, 5)
        return
    # slurmctld sends the job's end to slurmdbd asynchronously: poll until it is there.
    deadline = time.monotonic() + TIMEOUT
    while True:
        acct = job_lookup.sacct_job_info(job, completion=False)
        if (acct is not None and acct.ended) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert acct is not None and acct.source == "sacct-json"
    assert (str(acct.state), acct.exit_code, acct.derived_exit_code) == ("FAILED", 3, 5)
    assert (acct.name, acct.nodelist, acct.num_nodes) == ("acct-failing", ctl.nodelist, 1)
    assert acct.restart_count == 0 and acct.partition == ctl.partition
    assert acct.start_time is not None and acct.end_time is not None
    assert acct.stdout == str(tmp_path / "out.txt") and acct.work_dir == str(tmp_path)


def test_unknown_job_in_accounting(slurm_cluster):
    assert job_lookup.sacct_json_job_info(987654321) is None
    assert job_lookup.sacct_job_info(987654321, completion=False) is None
