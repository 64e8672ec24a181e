"""The wheel carries templates/ and site-configs/, so a pip-installed snrun finds them; with the
torch extra, a clean venv has everything in-job code needs."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def build_wheel(out: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("slurm_supernode-*.whl")
    return wheel


def test_wheel_ships_templates_and_site_configs(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    names = set(zipfile.ZipFile(wheel).namelist())
    for tmpl in (ROOT / "templates").iterdir():
        assert f"slurm_supernode/_data/templates/{tmpl.name}" in names
    for site in (ROOT / "site-configs").glob("*.yaml"):
        assert f"slurm_supernode/_data/site-configs/{site.name}" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "snrun = slurm_supernode.cli.main:entry" in zipfile.ZipFile(wheel).read(entry).decode()


# Every rank calls all_gather_object, which needs numpy (torch does not depend on it).
GLOO_JOB = """
import sys
import torch.distributed as dist
dist.init_process_group("gloo")
seen = [None] * dist.get_world_size()
dist.all_gather_object(seen, {"rank": dist.get_rank()})
assert [s["rank"] for s in seen] == list(range(dist.get_world_size())), seen
import slurm_supernode.cli.main  # the package imports in the venv too
sys.stdout.write(f"rank {dist.get_rank()} ok\\n")  # one write: ranks share the stdout
sys.stdout.flush()
dist.destroy_process_group()
"""


@pytest.mark.skipif(
    os.environ.get("SNRUN_SKIP_VENV") == "1", reason="SNRUN_SKIP_VENV=1: clean-venv test skipped"
)
def test_torch_extra_in_a_clean_venv_runs_a_gloo_job(tmp_path: Path) -> None:
    """pip install slurm-supernode[torch] into an empty venv, then a 2-rank gloo job that uses
    all_gather_object (the demo's check does): fails without numpy in the extra."""
    wheel = build_wheel(tmp_path / "dist")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    # torch pinned first: the CPU build on this machine's disk (a bare range would fetch CUDA).
    for args in (["torch==2.13.0"], [f"{wheel}[torch]"]):
        proc = subprocess.run([*pip, *args], capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-2000:]
    script = tmp_path / "job.py"
    script.write_text(GLOO_JOB)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "torch.distributed.run", "--standalone",
         "--nproc-per-node=2", str(script)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(ln for ln in proc.stdout.splitlines() if ln.startswith("rank")) == [
        "rank 0 ok",
        "rank 1 ok",
    ]
