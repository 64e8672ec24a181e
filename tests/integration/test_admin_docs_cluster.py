"""The admin documents' commands that need a cluster, run as written on the local one
(tests/test_admin_docs.py places every command of docs/admin.md, health.md, bench.md and
doctor.md: run there, here, or in another named test)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.integration.helpers import pythonpath
from tests.test_admin_docs import ON_CLUSTER, doc_commands

pytestmark = pytest.mark.slurm


def test_admin_md_cluster_commands_run_as_written(slurm_cluster, tmp_path) -> None:
    here = [c for c in doc_commands("admin") if ON_CLUSTER.get(c, "").endswith(__name__.split(
        ".")[-1] + ".py")]  # fmt: skip
    assert here == ["scontrol show topology | head", "snrun bench schedule --nightly 02:00"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "snrun").write_text(f'#!/bin/sh\nexec {sys.executable} -m slurm_supernode "$@"\n')
    (bin_dir / "snrun").chmod(0o755)
    # `export SNRUN_SITE=mysite`: the cluster's own site; HOME keeps the schedule registry here
    env = os.environ | {"PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": pythonpath(),
                        "SNRUN_SITE": str(slurm_cluster.conf.parent / "site.yaml"),
                        "HOME": str(tmp_path)}  # fmt: skip
    env.pop("SNRUN_BENCH_DB", None)

    def run(command: str) -> str:
        proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env,
                              cwd=tmp_path, timeout=240)  # fmt: skip
        assert proc.returncode == 0, f"{command}\n{proc.stderr}"
        return proc.stdout + proc.stderr

    topology = run(here[0])
    assert ("BlockName=" in topology) or ("SwitchName=" in topology), topology
    installed = run(here[1])
    assert "Submitted batch job" in installed or "scrontab" in installed, installed
    listed = run("snrun bench schedule --list")
    assert "local" in listed and "02:00" in listed, listed
    removed = run("snrun bench schedule --remove local")  # the default name: the site's
    assert "local" in removed, removed
