"""Containers on the real cluster: a 2-node gloo job through snrun with torchrun and the ranks
inside the image, and a rank crash restarted in the container; through Slurm OCI (runc),
pyxis + enroot (built from the vendored sources against the cluster's Slurm) and, on the
24.11/26.05 roots, Apptainer (Debian sid's) with a .sif image.

Needs the cluster booted with ``--containers`` (the session fixture does that where the
runtimes can be set up: runc installed or a namespaced root; pyxis' sources in
../shared/vendor or $SNRUN_MC_VENDOR) and the test image (contrib/minicluster/build-image,
built once and cached; 1-3 min the first time). Every rank proves it runs in the image through
a file only the image has: Slurm without oci.conf silently runs ``--container`` steps on the
host. Which runtimes the cluster has is what snrun itself detects."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slurm_supernode.hostlist import expand
from slurm_supernode.slurm.container_runtimes import detect_container_runtimes
from slurm_supernode.slurm.job_lookup import job_info
from tests.integration.helpers import (
    ROOT,
    attempts,
    ledger,
    snrun,
    submit,
    wait_final,
    wait_for,
)
from tests.slurm_cluster import container_runtimes, pyxis_missing

pytestmark = pytest.mark.slurm

IMAGE = Path(os.environ.get("SNRUN_MC_CACHE", "/var/cache/snrun-minicluster"), "images", "oci-test")
MARKER = "/etc/snrun-test-image"

RANK_SCRIPT = """\
import json, os, sys, time
from datetime import timedelta
import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=timedelta(seconds=60))
rank = dist.get_rank()
attempt = int(os.environ["SNRUN_ATTEMPT"])
if "--crash" in sys.argv and attempt == 0 and rank == 1:
    sys.exit(3)
job_dir = os.environ["SNRUN_JOB_DIR"]
if attempt == 1:  # the test attaches (py-spy) to the running ranks, then says go
    open(os.path.join(job_dir, f"ready.r{rank}"), "w").close()
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(job_dir, "go")) and time.monotonic() < deadline:
        time.sleep(0.1)
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
path = os.path.join(job_dir, f"rank{rank}.a{attempt}.json")
with open(path + ".tmp", "w") as fh:
    json.dump(out, fh)
os.replace(path + ".tmp", path)
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def image(slurm_cluster) -> Path:
    """The cached test bundle, its squashfs and, where the cluster has Apptainer, its SIF
    (built the first time; the SIF by the cluster's own apptainer, through the wrapper)."""
    squash = [] if shutil.which("mksquashfs") is None else ["--squashfs"]
    if "apptainer" in detect_container_runtimes().found:
        squash.append("--sif")
    built = subprocess.run(
        ["bash", str(ROOT / "contrib" / "minicluster" / "build-image"), str(IMAGE), *squash],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert built.returncode == 0, built.stderr
    return IMAGE


@pytest.fixture(params=["oci", "pyxis", "apptainer"])
def runtime(request, slurm_cluster) -> str:
    """A runtime the cluster has (as snrun detects it); skipped, saying why, where it cannot
    be set up here."""
    name = request.param
    if name == "oci" and shutil.which("runc") is None and not slurm_cluster.namespaced:
        pytest.skip("runc is not installed (make install): no Slurm OCI runtime to test")
    why = pyxis_missing(slurm_cluster.namespaced)
    if name == "pyxis" and why:
        pytest.skip(f"pyxis + enroot cannot be set up here: {why}")
    if name == "apptainer" and not slurm_cluster.namespaced:
        pytest.skip("Debian packages Apptainer only for glibc >= 2.38: the 24.11/26.05 roots")
    if name not in container_runtimes():  # e.g. Slurm 25.11 built from source
        pytest.skip(f"the test session boots Slurm {slurm_cluster.slurm} without {name}")
    found = detect_container_runtimes()
    if name not in found.found:
        pytest.fail(
            f"the cluster runs without {name} ({found.missing[name]}): boot it with "
            f"`minicluster up --containers={name}` (the test session does where it can)",
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
    if runtime == "apptainer":  # root lacks CAP_SYS_RESOURCE in this VM: a user namespace
        text += "  options: [--userns]\n"
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
    image = {
        "oci": image,
        "pyxis": image.with_suffix(".sqsh"),
        "apptainer": image.with_suffix(".sif"),
    }[runtime]
    job_id, job_dir = submit(
        "--site", str(site), "-N", "2", "--allow-partial", "--nproc-per-node", "2",
        "--container-image", str(image), "--env", "MY_VAR=a b'c",
        "--max-restarts", "1", "-t", "5", str(script), "--crash",
        jobs=jobs,
    )  # fmt: skip
    ready = [job_dir / f"ready.r{r}" for r in range(4)]
    try:
        wait_for(lambda: all(p.exists() for p in ready), 180, "attempt 1 running")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {attempts(job_dir)}\n{_logs(job_dir)}") from None
    try:  # snrun attach beside the containers; py-spy reaches every rank inside them
        stacks = snrun("attach", str(job_id), "--py-spy", jobs=jobs).stdout
        assert all(f"== rank {r}" in stacks for r in range(4)), stacks
        assert "rank.py" in stacks, stacks
        info = job_info(job_id)
        node = snrun("attach", str(job_id), "--", "sh", "-c", "echo $SLURMD_NODENAME", jobs=jobs)
        assert info is not None and node.stdout.split() == [expand(info.nodelist)[0]], node
    finally:
        (job_dir / "go").touch()
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
    (start,) = [r for r in ledger(job_dir) if r["event"] == "attempt_start" and r["attempt"] == 1]
    # one container per node of attempt 1 (the job may land on any two nodes)
    assert enters == [f"{node}.1.enter.sh" for node in sorted(expand(start["nodes"]))]


def _logs(job_dir: Path) -> str:
    return "\n".join(p.read_text()[-3000:] for p in (job_dir / "logs").glob("*.out"))


def test_an_image_that_cannot_start_fails_once_with_its_reason(
    slurm_cluster, image: Path, tmp_path: Path
) -> None:
    """A bundle without a shell passes the checks at submit but cannot start on any node: one
    attempt, cause `container` with the runtime's words, no blind restarts."""
    if "oci" not in container_runtimes():
        pytest.skip(f"the test session boots Slurm {slurm_cluster.slurm} without Slurm OCI")
    if not (slurm_cluster.conf.parent / "oci.conf").exists():
        pytest.skip("needs Slurm OCI (runc): the cluster runs without oci.conf")
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


def test_an_image_without_python_is_cause_container_with_its_own_line(
    slurm_cluster, image: Path, tmp_path: Path
) -> None:
    """The test image has no python (debootstrap minbase) and the site names none of its own
    (containers.python: python3, nothing mounted): every node's container fails before
    torchrun; one attempt, cause `container`, the shell's own line in status and in logs."""
    if "oci" not in container_runtimes():
        pytest.skip(f"the test session boots Slurm {slurm_cluster.slurm} without Slurm OCI")
    if not (slurm_cluster.conf.parent / "oci.conf").exists():
        pytest.skip("needs Slurm OCI (runc): the cluster runs without oci.conf")
    site = tmp_path / "site-bare.yaml"
    site.write_text(
        (ROOT / "site-configs" / "local.yaml").read_text() + "containers:\n  runtime: oci\n"
    )
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    jobs = tmp_path / "jobs"
    job_id, job_dir = submit(
        "--site", str(site), "-N", "2", "--allow-partial", "--nproc-per-node", "1",
        "--container-image", str(image), "--max-restarts", "3", "-t", "5", str(script),
        jobs=jobs,
    )  # fmt: skip
    final = wait_final(job_dir, timeout=120)
    ends = attempts(job_dir)
    assert final["state"] == "FAILED" and [a["cause"] for a in ends] == ["container"], ends
    assert "python3: not found" in final["reason"], final
    status = json.loads(snrun("status", str(job_id), "--json", jobs=jobs).stdout)
    assert "python3: not found" in status["attempts"][0]["detail"]
    logs = snrun("logs", str(job_id), jobs=jobs).stdout.splitlines()
    heads = {line.split("]")[0] for line in logs}  # "[NODE container": each node's own
    assert len(heads) == 2 and all(h.endswith(" container") for h in heads), logs
    # the shell's own words on a node that failed (another may have been stopped first)
    assert any("python3: not found" in line for line in logs), logs


NAMED_SCRIPT = """\
import json, os, sys, time
attempt, rank = int(os.environ["SNRUN_ATTEMPT"]), int(os.environ["RANK"])
job_dir = os.environ["SNRUN_JOB_DIR"]
seen = os.path.exists("/snrun-named")  # in the container's own root: no mount holds it
print(f"rank {rank} attempt {attempt} named={seen}", flush=True)
if rank == 0:
    open("/snrun-named", "w").close()
out = {"seen": seen, "marker": os.path.exists("/etc/snrun-test-image")}
path = os.path.join(job_dir, f"named.r{rank}.a{attempt}.json")
with open(path + ".tmp", "w") as fh:
    json.dump(out, fh)
os.replace(path + ".tmp", path)
if attempt == 0:
    sys.exit(3)  # a crash: restarted in the same allocation
if attempt == 1:
    while True:  # until the test requeues the job
        time.sleep(0.2)
"""


def test_named_container_is_reused_by_the_restart_and_attach_logs_requeue_work(
    slurm_cluster, image: Path, tmp_path: Path
) -> None:
    """pyxis with --container-name: the restart in the allocation finds what attempt 0 wrote
    into the container's own root (enroot unpacked the image once); while it runs, `snrun
    attach` reaches the node and py-spy the ranks inside the container; a Slurm requeue runs
    the job again in the image; `snrun logs` reads the container ranks' output."""
    from slurm_supernode.slurm.jobs import requeue

    if "pyxis" not in detect_container_runtimes().found:
        pytest.skip("needs pyxis (minicluster up --containers=pyxis)")
    jobs = tmp_path / "jobs"
    script = tmp_path / "named.py"
    script.write_text(NAMED_SCRIPT)
    site = container_site(tmp_path, "pyxis")  # a root attempt 0 can write to: the site's option
    site.write_text(site.read_text() + "  options: [--container-writable]\n")
    # one node: every node of the test cluster is this one host, where one name is one
    # container; where pyxis' names outlive their job (container_scope=global, the host's
    # 22.05): one per test run
    name = f"keep{os.getpid()}-{time.monotonic_ns()}"
    job_id, job_dir = submit(
        "--site", str(site), "-N", "1", "--allow-partial",
        "--nproc-per-node", "2", "--container-image", str(image.with_suffix(".sqsh")),
        "--container-name", name, "--max-restarts", "3", "-t", "5", str(script),
        jobs=jobs,
    )  # fmt: skip

    def record(rank: int, attempt: int) -> dict | None:
        path = job_dir / f"named.r{rank}.a{attempt}.json"
        return json.loads(path.read_text()) if path.exists() else None

    try:
        wait_for(lambda: record(0, 1) and record(1, 1), 180, "attempt 1 running")
    except AssertionError as exc:
        state = subprocess.run(["scontrol", "show", "job", str(job_id)], capture_output=True)
        nodes = subprocess.run(["sinfo", "-N", "-o", "%N %t %E"], capture_output=True)
        raise AssertionError(
            f"{exc}: {state.stdout.decode()[-1500:]}\n{nodes.stdout.decode()}\n{_logs(job_dir)}"
            f"\n{ledger(job_dir)}"
        ) from None
    assert record(0, 0) == {"seen": False, "marker": True}, _logs(job_dir)
    assert record(1, 1) == {"seen": True, "marker": True}  # the same container, reused
    info = job_info(job_id)
    node = snrun("attach", str(job_id), "--", "sh", "-c", "echo $SLURMD_NODENAME", jobs=jobs)
    assert info is not None and node.stdout.split() == [info.nodelist], node
    stacks = snrun("attach", str(job_id), "--py-spy", jobs=jobs).stdout
    assert "== rank 0" in stacks and "== rank 1" in stacks and "named.py" in stacks, stacks
    requeue(job_id)
    final = wait_final(job_dir, 240)
    assert final["state"] == "COMPLETED", (final, attempts(job_dir))
    # the requeued run, in the image: with container_scope=job the requeue's epilog removed the
    # container (a fresh one from the image: rank 0 sees no file), with global scope it is reused
    kept = _pyxis_scope() == "global"
    assert record(0, 2) == {"seen": kept, "marker": True}, (kept, _logs(job_dir))
    log = snrun("logs", str(job_id), "--rank", "1", jobs=jobs).stdout  # the newest attempt
    assert "[rank 1] rank 1 attempt 2 named=" in log and "attempt 1" not in log, log
    log = snrun("logs", str(job_id), "--rank", "1", "--attempt", "1", jobs=jobs).stdout
    assert "[rank 1] rank 1 attempt 1 named=True" in log, log


IN_IMAGE_PYTHON = """\
#!/bin/sh
# the site's python inside the image: refuses to run anywhere else, marks each node it ran on
[ -e /etc/snrun-test-image ] || {{ echo "snrun test: not in the image" >&2; exit 97; }}
: > "$SNRUN_JOB_DIR/in-image.$SNRUN_NODE_RANK"
exec {python} "$@"
"""


def test_bench_runs_in_the_sites_bench_image(slurm_cluster, image: Path, tmp_path: Path) -> None:
    """The site's bench.container_image: `snrun bench submit` measures in the image (torchrun
    through a python that exists only there), with snrun's own package mounted in (the
    image's python has no snrun); --container-mounts from the command line are added; the run
    is stored like a bare-metal one."""
    from slurm_supernode.bench.store import open_store

    if "oci" not in detect_container_runtimes().found:
        pytest.skip(f"the test session boots Slurm {slurm_cluster.slurm} without Slurm OCI")
    tools = tmp_path / "tools"
    tools.mkdir()
    python = tools / "py"
    python.write_text(IN_IMAGE_PYTHON.format(python=Path(sys.executable).resolve()))
    python.chmod(0o755)
    site = container_site(tmp_path, "oci")
    host_python = f"python: {Path(sys.executable).resolve()}"
    inside = "/opt/snrun-test-tools"  # --container-mounts puts it there: the site's python
    text = site.read_text().replace(host_python, f"python: {inside}/py")
    db = tmp_path / "r.sqlite"
    text = text.replace("results_db: ~/.snrun/bench.sqlite", f"results_db: {db}")
    site.write_text(text.replace("bench:\n", f"bench:\n  container_image: {image}\n", 1))
    assert f"container_image: {image}" in site.read_text()
    jobs = tmp_path / "jobs"
    proc = snrun("bench", "submit", "--site", str(site), "--jobs-dir", str(jobs), "-S", "1",
                 "--nproc-per-node", "1", "--backend", "gloo", "--sizes", "1K",
                 "--collectives", "all_reduce", "--scopes", "world", "--iters", "2",
                 "--warmup", "0", "--container-mounts", f"{tools}:{inside}:ro",
                 "--parsable", "--wait", jobs=jobs, check=False)  # fmt: skip
    (job_dir,) = jobs.glob("snrun-bench*")
    assert proc.returncode == 0, proc.stdout + proc.stderr + _logs(job_dir)
    with open_store(db) as store:
        (run,) = store.runs()
    marks = sorted(p.name for p in job_dir.glob("in-image.*"))
    assert marks == [f"in-image.{n}" for n in range(run.nodes)], (marks, _logs(job_dir))
    assert run.job_id == proc.stdout.split()[0] and run.world_size == run.nodes


HOLD_SCRIPT = """\
import os, time
job_dir = os.environ["SNRUN_JOB_DIR"]
open(os.path.join(job_dir, "ready"), "w").close()
deadline = time.monotonic() + 120
while not os.path.exists(os.path.join(job_dir, "go")) and time.monotonic() < deadline:
    time.sleep(0.1)
"""


def _pyxis_scope() -> str:
    """pyxis' container_scope as the running Slurm's plugstack.conf sets it (default global)."""
    found = detect_container_runtimes().found.get("pyxis")
    if found is None:
        pytest.skip("needs pyxis (minicluster up --containers=pyxis)")
    plugstack = Path(found.split(" in ", 1)[1])
    for line in plugstack.read_text().splitlines():
        if "spank_pyxis.so" in line and (m := re.search(r"\bcontainer_scope=(\w+)", line)):
            return m[1]
    return "global"


def test_a_named_container_is_removed_when_its_job_ends(
    slurm_cluster, image: Path, tmp_path: Path
) -> None:
    """pyxis with container_scope=job (the 24.11/26.05 roots, where enroot is on the fixed PATH
    of pyxis' SPANK epilog): the job's named container is in `enroot list` while the job runs,
    gone once the job has ended, and the epilog that removed it drained no node."""
    from slurm_supernode.slurm.nodes import node_infos

    if _pyxis_scope() != "job":
        pytest.skip(
            "pyxis runs with container_scope=global here (a cluster on the host, 22.05 or "
            "25.11: enroot is not on the SPANK epilog's PATH; docs/containers.md)"
        )
    jobs = tmp_path / "jobs"
    script = tmp_path / "hold.py"
    script.write_text(HOLD_SCRIPT)
    name = f"scoped{os.getpid()}"
    job_id, job_dir = submit(
        "--site", str(container_site(tmp_path, "pyxis")), "-N", "1", "--allow-partial",
        "--nproc-per-node", "1", "--container-image", str(image.with_suffix(".sqsh")),
        "--container-name", name, "--max-restarts", "0", "-t", "5", str(script), jobs=jobs,
    )  # fmt: skip
    container = f"pyxis_{job_id}_{name}"  # pyxis' name of a job-scoped container

    def listed() -> list[str]:
        out = subprocess.run(
            slurm_cluster.inside("enroot", "list"), capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    wait_for(lambda: (job_dir / "ready").exists(), 180, "the rank running in the container")
    assert container in listed()
    (job_dir / "go").touch()
    final = wait_final(job_dir, 120)
    assert final["state"] == "COMPLETED", (final, _logs(job_dir))
    wait_for(lambda: container not in listed(), 60, f"pyxis' epilog removing {container}")
    info = wait_for(
        lambda: (i := job_info(job_id)) is not None and i.state.ended and i, 60, "the job ended"
    )
    (node,) = node_infos(info.nodelist)
    assert not node.drained, (node.state, node.reason)


HEALTH_PYTHON = """\
#!/bin/sh
# the site's python inside the image: refuses to run anywhere else, marks that it ran
[ -e /etc/snrun-test-image ] || {{ echo "snrun test: not in the image" >&2; exit 97; }}
: > "$SNRUN_TEST_MARKS/in-image"
exec {python} "$@"
"""


def test_health_runs_its_allreduce_in_the_image(
    runtime: str, image: Path, tmp_path: Path, slurm_cluster
) -> None:
    """`snrun health --allreduce --container-image` in a job step: the node checks on the host,
    the gloo all-reduce in the image, through a python that exists only there (it refuses to
    run anywhere else and marks that it ran). Outside a job, pyxis and Slurm OCI (which start
    containers only as job steps) are refused in one line."""
    tools, marks = tmp_path / "tools", tmp_path / "marks"
    tools.mkdir()
    marks.mkdir()
    python = tools / "py"
    python.write_text(HEALTH_PYTHON.format(python=Path(sys.executable).resolve()))
    python.chmod(0o755)
    site = container_site(tmp_path, runtime)
    inside = "/opt/snrun-test-tools"
    text = site.read_text()
    site.write_text(
        text.replace(f"python: {Path(sys.executable).resolve()}", f"python: {inside}/py")
    )
    img = {
        "oci": image,
        "pyxis": image.with_suffix(".sqsh"),
        "apptainer": image.with_suffix(".sif"),
    }
    argv = [
        sys.executable, "-m", "slurm_supernode", "health", "--site", str(site), "--allreduce",
        "--allreduce-backend", "gloo", "--timeout", "180", "--container-image", str(img[runtime]),
        "--container-mounts", f"{tools}:{inside}:ro,{marks}:{marks}", "--json",
    ]  # fmt: skip
    env = {**os.environ, "SNRUN_TEST_MARKS": str(marks)}
    node = slurm_cluster.nodes[0]
    step = ["srun", "-N1", "-n1", f"--nodelist={node}", "-t", "5", *argv]
    proc = subprocess.run(step, env=env, capture_output=True, text=True, timeout=600)
    assert proc.stdout.strip(), proc.stderr
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["allreduce"]["status"] == 0, (checks, proc.stderr)
    assert checks["allreduce"]["message"].endswith(f"(in the {runtime} image {img[runtime]})")
    assert (marks / "in-image").exists()  # the all-reduce's python ran in the image
    assert "devices" in checks  # the node checks ran too (on the host)
    if runtime in ("pyxis", "oci"):
        outside = {k: v for k, v in env.items() if not k.startswith("SLURM_JOB")}
        proc = subprocess.run(argv, env=outside, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and not proc.stdout, proc
        (line,) = proc.stderr.strip().splitlines()
        assert "only as a step of a job" in line and line.startswith("snrun health: error:"), line
