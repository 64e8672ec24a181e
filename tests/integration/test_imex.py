"""IMEX channels on the real cluster: Slurm's switch/nvidia_imex with a configured major
(``minicluster up --imex=3``: no NVIDIA driver needed, the plugin mknods each step's channel)
on a cluster of its own, booted beside the session's for this module (its channel count and
plugin must not touch the other tests' jobs).

One 2-super-node job whose ranks (4 per node) report the channel they see (one per job, or one
per super node where Slurm gives per-segment channels, 25.11+); jobs held at once until the
channels run out (different channels; then the next job pends with its reason in words where
Slurm makes it wait, 25.11+, or runs without one on 24.11 and its preflight says so); a tray
whose IMEX domain is down (a fake nvidia-imex-ctl on PATH) named by the preflight and the job
requeued without it. The plugin needs Slurm >= 24.05 (22.05: skipped, read from the running
Slurm)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurm_supernode.hostlist import expand
from tests.integration.helpers import ledger, snrun, submit, wait_final, wait_for
from tests.slurm_cluster import MINICLUSTER, SlurmCluster, container_runtimes

pytestmark = pytest.mark.slurm

CHANNELS = 3  # SwitchParameters=imex_channel_count: 24.11 gives 1-2 (0 reserved), 25.11+ 1-3
RANK = """\
import errno, json, os, stat, sys, time
d = "/dev/nvidia-caps-imex-channels"
seen = sorted(os.listdir(d)) if os.path.isdir(d) else None
dev = opened = None
if seen:  # the device node itself: char, its major/minor, and why it cannot be opened
    st = os.stat(os.path.join(d, seen[0]))
    dev = [stat.S_ISCHR(st.st_mode), os.major(st.st_rdev), os.minor(st.st_rdev)]
    try:
        os.close(os.open(os.path.join(d, seen[0]), os.O_RDWR))
        opened = "ok"
    except OSError as exc:  # ENXIO: no driver behind the major here; EPERM: a device rule
        opened = errno.errorcode.get(exc.errno, str(exc.errno))
rank = int(os.environ["RANK"])
out = {"rank": rank, "node": os.environ["SNRUN_NODE"], "channels": seen,
       "env": os.environ.get("NVIDIA_IMEX_CHANNELS"), "attempt": os.environ["SNRUN_ATTEMPT"],
       "image": os.path.exists("/etc/snrun-test-image"),  # the marker only the image has
       "dev": dev, "opened": opened}
job_dir = os.environ["SNRUN_JOB_DIR"]
path = os.path.join(job_dir, f"rank{rank}.a{out['attempt']}.json")
with open(path + ".tmp", "w") as fh:
    json.dump(out, fh)
os.replace(path + ".tmp", path)
go = os.path.join(os.path.dirname(job_dir), "go")
if "--hold" in sys.argv:
    deadline = time.monotonic() + 300
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.2)
"""
# a tray whose IMEX domain is not UP: the second tray of each super node, first attempt only
DOWN_CTL = """\
#!/bin/sh
n=${SLURMD_NODENAME#n}
if [ "${SNRUN_ATTEMPT:-0}" = 0 ] && [ $((n % 4)) = 1 ]; then state=DOWN; else state=UP; fi
printf 'Nodes:\\nNode #0 - 127.0.0.1 - READY\\nDomain State: %s\\n' "$state"
"""


class ImexCluster:
    def __init__(
        self,
        state_dir: Path,
        env: dict[str, str],
        version: tuple[int, int],
        runtimes: tuple[str, ...] = (),
    ) -> None:
        self.state_dir, self.env, self.version = state_dir, env, version
        self.runtimes = runtimes  # container runtimes it was booted with
        self.site = state_dir / "etc" / "site.yaml"

    @property
    def per_segment(self) -> bool:
        return self.version >= (25, 11)


def _mc(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(MINICLUSTER), *args], capture_output=True, text=True, env=env, timeout=900
    )


@pytest.fixture(scope="module")
def imex_cluster(slurm_cluster: SlurmCluster) -> Iterator[ImexCluster]:
    if slurm_cluster.version < (24, 5):
        pytest.skip(
            f"Slurm {slurm_cluster.version[0]}.{slurm_cluster.version[1]:02d} has no "
            "switch/nvidia_imex (24.05+)"
        )
    state = Path(f"{slurm_cluster.state_dir}-imex")
    env = os.environ | {"SNRUN_MC_DIR": str(state)}
    if not slurm_cluster.namespaced:  # 25.11 on the host's network: ports of its own
        env |= {"SNRUN_MC_CTLD_PORT": "6847", "SNRUN_MC_SLURMD_PORT": "17400"}
    which = ["--slurm", slurm_cluster.slurm]
    runtimes = container_runtimes()  # the session's (no Apptainer on 25.11): a job each
    boxes = ["--containers=" + ",".join(runtimes)] if runtimes else []
    up = _mc(env, "up", *which, "--topology", "block", f"--imex={CHANNELS}", *boxes)
    if up.returncode != 0:
        pytest.fail(f"minicluster up --imex failed: {up.stderr.strip()}", pytrace=False)
    cluster_env = dict(
        ln.split("=", 1) for ln in _mc(env, "env", *which).stdout.splitlines() if "=" in ln
    )
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = cluster_env["SLURM_CONF"]
    try:
        yield ImexCluster(state, env, slurm_cluster.version, tuple(runtimes))
    finally:
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old
        _mc(env, "down", *which)


def ranks(job_dir: Path, attempt: int = 0) -> list[dict]:
    return sorted(
        (json.loads(p.read_text()) for p in job_dir.glob(f"rank*.a{attempt}.json")),
        key=lambda r: r["rank"],
    )


def job(
    cluster: ImexCluster, script: Path, jobs: Path, *args: str, hold: bool = False
) -> tuple[int, Path]:
    return submit(
        "--site", str(cluster.site), "--nproc-per-node", "4", "-t", "5", *args, str(script),
        *(["--hold"] if hold else []), jobs=jobs,
    )  # fmt: skip


def test_every_rank_of_a_two_supernode_job_sees_its_segments_channel(
    imex_cluster: ImexCluster, tmp_path: Path
) -> None:
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    _, job_dir = job(imex_cluster, script, tmp_path / "jobs", "-S", "2")
    final = wait_final(job_dir)
    assert final["state"] == "COMPLETED", final
    seen = ranks(job_dir)
    assert len(seen) == 32  # 8 trays x 4 ranks
    by_sn: dict[str, set[tuple[str, ...]]] = {}
    for r in seen:
        assert r["channels"] is not None and len(r["channels"]) == 1, r
        assert r["env"] == r["channels"][0].removeprefix("channel"), r  # NVIDIA_IMEX_CHANNELS
        assert r["opened"] in ("ENXIO", "ok"), r  # only the missing driver says no
        sn = "sn0" if int(r["node"][1:]) < 4 else "sn1"
        by_sn.setdefault(sn, set()).add(tuple(r["channels"]))
    assert all(len(v) == 1 for v in by_sn.values()), by_sn  # the same on all trays of a segment
    per_sn = [next(iter(by_sn[sn])) for sn in ("sn0", "sn1")]
    plan = (job_dir / "plan.json").read_text()
    if imex_cluster.per_segment:  # 25.11+: asked for, and one channel per super node
        assert "--network=unique-channel-per-segment" in plan
        assert per_sn[0] != per_sn[1], by_sn
    else:  # 24.11: one channel for the job
        assert "--network=unique-channel-per-segment" not in plan
        assert per_sn[0] == per_sn[1], by_sn


def test_the_batch_step_has_a_channel_from_25_11(imex_cluster: ImexCluster, tmp_path: Path) -> None:
    """What each version gives the batch step (snrun never depends on it: its ranks run in the
    agent's step): 24.11 an empty channel directory, 25.11+ the job's channel."""
    from slurm_supernode.slurm import jobs

    out = tmp_path / "batch.txt"
    proc = subprocess.run(
        ["sbatch", "--parsable", "-N1", "-t", "2", "-o", "/dev/null"],
        input=f"#!/bin/sh\nls -1 /dev/nvidia-caps-imex-channels > {out} 2>&1\n",
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    info = jobs.wait_for(jobs.parse_job_id(proc.stdout), set(), 120)
    assert info.state.base == "COMPLETED", info
    seen = out.read_text().split()
    if imex_cluster.version >= (25, 11):
        assert len(seen) == 1 and seen[0].startswith("channel"), seen
    else:
        assert seen == [], seen


def test_jobs_get_different_channels_until_they_run_out(
    imex_cluster: ImexCluster, tmp_path: Path
) -> None:
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    held: list[tuple[int, Path]] = []
    channels: list[str] = []
    try:
        for _ in range(4):  # 8 one-tray jobs fit: only the channels can run out
            job_id, job_dir = job(
                imex_cluster, script, jobs, "-N", "1", "--allow-partial", hold=True
            )
            held.append((job_id, job_dir))
            outcome = wait_for(lambda d=job_dir, i=job_id: _outcome(d, i, jobs), 240, "a channel")
            if outcome[0] != "channel":
                break
            channels.append(outcome[1])
        assert len(channels) >= 2 and len(set(channels)) == len(channels), channels
        kind, what = outcome
        if imex_cluster.per_segment:  # 25.11+: the job waits, snrun status says why in words
            assert kind == "pending", outcome
            assert "IMEX channel" in what, what
        else:  # 24.11 starts it without a channel: the preflight ends the attempt, no tray blamed
            assert kind == "imex", outcome
            assert "no tray of the job has an IMEX channel" in what, what
    finally:
        (jobs / "go").touch()
        for job_id, _ in held:
            snrun("cancel", str(job_id), jobs=jobs, check=False)


def _outcome(job_dir: Path, job_id: int, jobs: Path) -> tuple[str, str] | None:
    seen = ranks(job_dir)
    if seen and len(seen) == 4:
        assert len({tuple(r["channels"] or ()) for r in seen}) == 1, seen
        return ("channel", (seen[0]["channels"] or ["none"])[0])
    ends = [r for r in ledger(job_dir) if r["event"] == "attempt_end"]
    if ends:
        return (str(ends[0].get("cause")), str(ends[0].get("detail")))
    status = snrun("status", str(job_id), jobs=jobs, check=False).stdout
    if "waiting for an IMEX channel" in status:  # a pending reason, not a requeued job's
        return ("pending", status)
    return None


def test_a_tray_whose_imex_domain_is_down_is_excluded(
    imex_cluster: ImexCluster, tmp_path: Path
) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-imex-ctl").write_text(DOWN_CTL)
    (fake / "nvidia-imex-ctl").chmod(0o755)
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{fake}{os.pathsep}{old}"  # the job's environment: every agent
    try:
        _, job_dir = job(imex_cluster, script, tmp_path / "jobs", "-S", "1")
    finally:
        os.environ["PATH"] = old
    final = wait_final(job_dir, timeout=400)
    ends = [r for r in ledger(job_dir) if r["event"] == "attempt_end"]
    assert ends[0]["cause"] == "imex", ends
    bad = ends[0]["detail"].split(":")[0].removeprefix("IMEX on ")
    assert bad in ("n1", "n5") and "IMEX domain state DOWN" in ends[0]["detail"], ends[0]
    assert final["state"] == "COMPLETED", final
    starts = [r for r in ledger(job_dir) if r["event"] == "attempt_start"]
    assert bad not in expand(starts[-1]["nodes"]), starts  # requeued without the tray
    assert len(ranks(job_dir, starts[-1]["attempt"])) == 16


IMAGE = Path(os.environ.get("SNRUN_MC_CACHE", "/var/cache/snrun-minicluster"), "images", "oci-test")


@pytest.fixture(scope="module")
def images(imex_cluster: ImexCluster) -> dict[str, Path]:
    """The container tests' image (build-image, cached) for each runtime the cluster has."""
    extra = {"pyxis": "--squashfs", "apptainer": "--sif"}
    flags = [extra[r] for r in imex_cluster.runtimes if r in extra]
    built = subprocess.run(
        ["bash", str(MINICLUSTER.parent / "build-image"), str(IMAGE), *flags],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    return {
        "oci": IMAGE,
        "pyxis": IMAGE.with_suffix(".sqsh"),
        "apptainer": IMAGE.with_suffix(".sif"),
    }


@pytest.mark.parametrize("runtime", ["pyxis", "oci", "apptainer", "apptainer --contain"])
def test_every_rank_sees_its_segments_channel_inside_the_container(
    imex_cluster: ImexCluster, images: dict[str, Path], runtime: str, tmp_path: Path
) -> None:
    """The same 2-super-node job with its ranks in the image (one per tray, lean): each rank
    sees the channel of its segment from inside (the image's marker file proves inside), and
    NVIDIA_IMEX_CHANNELS names it. What the runtime needs to pass the device in is snrun's
    (container mounts for pyxis and Apptainer, device entries of the OCI bundle)."""
    runtime, _, contain = runtime.partition(" ")  # Apptainer with a staged /dev: binds it
    if runtime not in imex_cluster.runtimes:
        pytest.skip(f"the test session boots Slurm {imex_cluster.version} without {runtime}")
    site = tmp_path / "site.yaml"
    prefix = Path(sys.prefix).resolve()
    text = imex_cluster.site.read_text() + (
        "containers:\n"
        f"  runtime: {runtime}\n"
        f"  python: {Path(sys.executable).resolve()}\n"
        f"  mounts: ['{prefix}:{prefix}:ro']\n"
    )
    if runtime == "apptainer":  # root lacks CAP_SYS_RESOURCE in this VM: a user namespace
        text += f"  options: [--userns{', ' + contain if contain else ''}]\n"
    site.write_text(text)
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    _, job_dir = submit(
        "--site", str(site), "--nproc-per-node", "1", "-t", "5", "-S", "2",
        "--container-image", str(images[runtime]), str(script), jobs=tmp_path / "jobs",
    )  # fmt: skip
    final = wait_final(job_dir)
    assert final["state"] == "COMPLETED", (final, ledger(job_dir))
    seen = ranks(job_dir)
    assert len(seen) == 8, seen  # 8 trays x 1 rank
    by_sn: dict[str, set[str]] = {}
    for r in seen:
        assert r["image"], r  # inside the container
        assert r["channels"] is not None and len(r["channels"]) == 1, r
        assert r["dev"] == [True, 511, int(r["channels"][0].removeprefix("channel"))], r
        # openable but for the driver: ENXIO here (no NVIDIA driver behind major 511), not
        # EACCES (a nodev mount) or EPERM (a device rule): on a GPU node it opens
        assert r["opened"] in ("ENXIO", "ok"), r
        assert r["env"] == r["channels"][0].removeprefix("channel"), r
        by_sn.setdefault("sn0" if int(r["node"][1:]) < 4 else "sn1", set()).add(r["channels"][0])
    assert all(len(v) == 1 for v in by_sn.values()), by_sn  # one channel per segment's trays
    assert (by_sn["sn0"] != by_sn["sn1"]) == imex_cluster.per_segment, by_sn
