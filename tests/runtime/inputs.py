"""Job inputs for runtime tests (what plan_job would write)."""

from __future__ import annotations

import dataclasses

from slurm_supernode.launch.inputs import JobInputs

BASE = JobInputs(
    snrun_version="test",
    job_name="t",
    site_file="/nonexistent/site.yaml",
    site_name="test",
    vendor="nvidia",
    layout={"tp": 1, "cp": 1, "ep": 1, "dp": 1, "pp": 1, "order": "tp-cp-ep-dp-pp"},
    nproc_per_node=None,
    allow_partial=False,
    strategy="features",
    supernodes=1,
    nodes=2,
    max_restarts=None,
    site_restarts={},
    preflight=False,
    fork_workers=False,
    hang_timeout=0.0,
    hang_startup=None,
    program_argv=("train.py", "--x", "a b"),
    python="/usr/bin/python3",
    workdir="/tmp",
    request={"sbatch_args": ["--nodes=2"], "heterogeneous": False},
)


def make_inputs(**kw) -> JobInputs:
    return dataclasses.replace(BASE, **kw)
