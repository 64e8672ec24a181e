"""Containers on the real cluster: a 2-node gloo job through snrun with torchrun and the ranks
inside the image, and a rank crash restarted in the container; through Slurm OCI (runc) and
through pyxis + enroot (built from the vendored sources).

Needs the cluster booted with ``--containers`` (the session fixture does that where the
runtimes can be set up: runc installed; pyxis' sources in ../shared/vendor or
$SNRUN_MC_VENDOR) and the test image (contrib/minicluster/build-image, built once and cached;
1-3 min the first time). Every rank proves it runs in the image through a file only the image
has: Slurm without oci.conf silently runs ``--container`` steps on the host.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.helpers import ROOT, attempts, submit, wait_final
from tests.slurm_cluster import container_runtimes, pyxis_missing

pytestmark = pytest.mark.slurm

IMAGE = Path(os.environ.get("SNRUN_MC_CACHE", "/var/cache/snrun-minicluster"), "images", "oci-test")
MARKER = "/etc/snrun-test-image"

RANK_SCRIPT = """\
import json, os, sys
from datetime import timedelta
import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=timedelta(seconds=60))
rank = dist.get_rank()
attempt = int(os.environ["SNRUN_ATTEMPT"])
if "--crash" in sys.argv and attempt == 0 and rank == 1:
    sys.exit(3)
t = torch.ones(1) * (rank + 1)
dist.all_reduce(t)
out = {
    "rank": rank,
    "sum": t.item(),
    "marker": os.path.exists("/etc/snrun-test-image"),
    "image_env": os.environ.get("SNRUN_TEST_IMAGE"),
    "node_rank": os.environ.get("SNRUN_NODE_RANK"),
    "attempt": attempt,
    "site_var": os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING"),
    "user_var": os.environ.get("MY_VAR"),
    "pid1": open("/proc/1/cmdline", "rb").read().replace(b"\\0", b" ").decode(),
}
path = os.path.join(os.environ["SNRUN_JOB_DIR"], f"rank{rank}.a{attempt}.json")
with open(path + ".tmp", "w") as fh:
    json.dump(out, fh)
os.replace(path + ".tmp", path)
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def image() -> Path:
    """The cached test bundle and its squashfs (built here the first time)."""
    squash = [] if shutil.which("mksquashfs") is None else ["--squashfs"]
    built = subprocess.run(
        ["bash", str(ROOT / "contrib" / "minicluster" / "build-image"), str(IMAGE), *squash],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert built.returncode == 0, built.stderr
    return IMAGE


@pytest.fixture(params=["oci", "pyxis"])
def runtime(request, slurm_cluster) -> str:
    """A runtime the cluster has; skipped, saying why, where it cannot be set up here."""
    name = request.param
    if slurm_cluster.namespaced:
        pytest.skip("containers on the namespaced roots need pivot_root (not done yet)")
    if name == "oci" and shutil.which("runc") is None:
        pytest.skip("runc is not installed (make install): no Slurm OCI runtime to test")
    if name == "pyxis" and pyxis_missing():
        pytest.skip(f"pyxis + enroot cannot be set up here: {pyxis_missing()}")
    if name not in container_runtimes():  # e.g. Slurm 25.11 built from source
        pytest.skip(f"the test session boots Slurm {slurm_cluster.slurm} without containers")
    conf = {"oci": "oci.conf", "pyxis": "plugstack.conf"}[name]
    if not (slurm_cluster.conf.parent / conf).exists():
        pytest.fail(
            f"the cluster runs without {conf}: boot it with `minicluster up "
            f"--containers={name}` (the test session does where the runtime can be set up)",
            pytrace=False,
        )
    return name


def container_site(tmp_path: Path, runtime: str) -> Path:
    """local.yaml with Slurm OCI; the host's python (and torch) mounted read-only at its path,
    like a site mounts a shared toolchain."""
    text = (ROOT / "site-configs" / "local.yaml").read_text()
    prefix = Path(sys.prefix).resolve()
    text += (
        "containers:\n"
        f"  runtime: {runtime}\n"
        f"  python: {Path(sys.executable).resolve()}\n"
        f"  mounts: ['{prefix}:{prefix}:ro']\n"
    )
    path = tmp_path / "site-oci.yaml"
    path.write_text(text)
    return path


def results(job_dir: Path, attempt: int) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(job_dir.glob(f"rank*.a{attempt}.json"))]


def test_two_node_job_runs_in_the_image_and_a_crash_restarts_in_it(
    runtime: str, image: Path, tmp_path: Path
) -> None:
    jobs = tmp_path / "jobs"
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    site = container_site(tmp_path, runtime)
    image = image if runtime == "oci" else image.with_suffix(".sqsh")
    _job_id, job_dir = submit(
        "--site", str(site), "-N", "2", "--allow-partial", "--nproc-per-node", "2",
        "--container-image", str(image), "--env", "MY_VAR=a b'c",
        "--max-restarts", "1", "-t", "5", str(script), "--crash",
        jobs=jobs,
    )  # fmt: skip
    final = wait_final(job_dir, timeout=240)
    ends = attempts(job_dir)
    assert final["state"] == "COMPLETED", (final, ends, _logs(job_dir))
    assert [a["cause"] for a in ends] == ["app_error", "success"], ends
    ranks = results(job_dir, 1)
    assert [r["rank"] for r in ranks] == [0, 1, 2, 3], _logs(job_dir)
    for r in ranks:
        assert r["marker"], r  # inside the image, not on the host
        if runtime == "oci":
            assert r["image_env"] == "1", r  # the image's config.json environment stays
        assert r["sum"] == 10.0  # the all-reduce crossed both containers
        assert r["user_var"] == "a b'c" and r["site_var"] == "3"
        # no PID namespace: PID 1 is the host's init, not the container's first process
        assert "torch.distributed.run" not in r["pid1"] and "enter.sh" not in r["pid1"], r
    assert sorted(r["node_rank"] for r in ranks) == ["0", "0", "1", "1"]
    assert not results(job_dir, 0) or all(r["marker"] for r in results(job_dir, 0))
    enters = sorted(p.name for p in (job_dir / "container").glob("*.1.enter.sh"))
    assert enters == ["n0.1.enter.sh", "n1.1.enter.sh"]  # one container per node, attempt 1


def _logs(job_dir: Path) -> str:
    return "\n".join(p.read_text()[-3000:] for p in (job_dir / "logs").glob("*.out"))


def test_an_image_that_cannot_start_fails_once_with_its_reason(
    slurm_cluster, image: Path, tmp_path: Path
) -> None:
    """A bundle without a shell passes the checks at submit but cannot start on any node: one
    attempt, cause `container` with the runtime's words, no blind restarts."""
    if "oci" not in container_runtimes():  # runc, on the host's Slurm only
        pytest.skip("needs Slurm OCI with runc on the host's Slurm")
    broken = tmp_path / "broken-image"
    (broken / "rootfs").mkdir(parents=True)
    (broken / "config.json").write_text((image / "config.json").read_text())
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    _job_id, job_dir = submit(
        "--site", str(container_site(tmp_path, "oci")), "-N", "2", "--allow-partial",
        "--nproc-per-node", "1", "--container-image", str(broken), "--max-restarts", "3",
        "-t", "5", str(script),
        jobs=tmp_path / "jobs",
    )  # fmt: skip
    final = wait_final(job_dir, timeout=120)
    ends = attempts(job_dir)
    assert final["state"] == "FAILED", (final, ends)
    assert [a["cause"] for a in ends] == ["container"], ends
    assert "did not start on any node" in final["reason"] and "/bin/sh" in final["reason"], final
