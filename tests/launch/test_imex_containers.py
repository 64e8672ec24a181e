"""Every runtime gets the step's IMEX channel on an imex_channels site: pyxis and Apptainer
bind the channel directory (where the node has it), Slurm OCI lists the channel devices in its
bundle and allows them (runc's default device rule denies every device)."""

from __future__ import annotations

import json
from pathlib import Path

from slurm_supernode.launch.container import ContainerSpec
from slurm_supernode.runtime.container_launch import plan_container_launch
from slurm_supernode.site.imex import CHANNEL_DIR

# the image's own rules: runc's default spec denies every device
IMAGE_CONFIG = {
    "root": {"path": "rootfs"},
    "linux": {"resources": {"devices": [{"allow": False, "access": "rwm"}]}},
}
# the image's own rules: runc's default spec denies every device
IMAGE_CONFIG = {
    "root": {"path": "rootfs"},
    "linux": {"resources": {"devices": [{"allow": False, "access": "rwm"}]}},
}
DEVICES = [(f"{CHANNEL_DIR}/channel3", 511, 3)]


def spec(runtime: str, tmp_path: Path) -> ContainerSpec:
    return ContainerSpec(
        runtime=runtime,
        image=str(tmp_path / "img"),
        python="python3",
        mounts=(f"{tmp_path}:{tmp_path}",),
        optional_mounts=("/dev/infiniband", CHANNEL_DIR),
        workdir=str(tmp_path),
    )


def launch(runtime: str, tmp_path: Path, has_channel: bool = True, mount_dev: str = "yes"):
    return plan_container_launch(
        spec(runtime, tmp_path),
        ["/host/python", "-m", "torch.distributed.run", "train.py"],
        {"NVIDIA_IMEX_CHANNELS": "3", "SNRUN_IMEX_CHANNELS": "3"},
        base_env={},
        names=[],
        job_dir=tmp_path / "job",
        hostname="n0",
        attempt=0,
        job_id=5,
        vendor="nvidia",
        image_config=IMAGE_CONFIG,
        exists=lambda p: has_channel and p == CHANNEL_DIR,
        channel_devices=lambda: DEVICES if has_channel else [],
        mount_dev=lambda: mount_dev,
    )


def test_pyxis_and_a_staged_apptainer_dev_bind_the_channel_directory(tmp_path):
    pyxis = launch("pyxis", tmp_path)
    mounts = next(a for a in pyxis.argv if a.startswith("--container-mounts="))
    assert f"{CHANNEL_DIR}:{CHANNEL_DIR}" in mounts and "/dev/infiniband" not in mounts
    # Apptainer with a staged /dev (apptainer.conf mount dev = minimal): the bind brings it in
    apptainer = launch("apptainer", tmp_path, mount_dev="minimal")
    bind = apptainer.argv[apptainer.argv.index("--bind") + 1]
    assert f"{CHANNEL_DIR}:{CHANNEL_DIR}" in bind.split(",") and "--nv" in apptainer.argv
    # the variable libnvidia-container's hooks (enroot, the NVIDIA toolkit) read goes in too
    enter = next(t for p, t in pyxis.files.items() if p.endswith(".enter.sh"))
    assert "export NVIDIA_IMEX_CHANNELS=3" in enter and "export SNRUN_IMEX_CHANNELS=3" in enter


def test_oci_lists_and_allows_the_channel_device(tmp_path):
    oci = launch("oci", tmp_path)
    config = json.loads(next(t for p, t in oci.files.items() if p.endswith("config.json")))
    assert not any(m["source"] == CHANNEL_DIR for m in config["mounts"])
    assert config["linux"]["devices"] == [
        {"path": f"{CHANNEL_DIR}/channel3", "type": "c", "major": 511, "minor": 3,
         "fileMode": 0o666, "uid": 0, "gid": 0},
    ]  # fmt: skip
    rules = config["linux"]["resources"]["devices"]
    assert rules[0] == {"allow": False, "access": "rwm"}  # the image's deny-all stays first
    assert rules[-1] == {"allow": True, "type": "c", "major": 511, "minor": 3, "access": "rwm"}


def test_a_node_without_the_directory_gets_nothing_added(tmp_path):
    oci = launch("oci", tmp_path, has_channel=False)
    config = json.loads(next(t for p, t in oci.files.items() if p.endswith("config.json")))
    assert "devices" not in config["linux"]
    pyxis = launch("pyxis", tmp_path, has_channel=False)
    assert not any(CHANNEL_DIR in a for a in pyxis.argv)


def test_apptainer_with_the_hosts_dev_gets_no_dev_bind(tmp_path):
    """mount dev = yes (the default): the host's /dev comes in with the step's channel
    directory; a --bind of it would be nodev (EACCES on open): not passed."""
    apptainer = launch("apptainer", tmp_path)
    bind = apptainer.argv[apptainer.argv.index("--bind") + 1]
    assert CHANNEL_DIR not in bind and str(tmp_path) in bind
    assert not any(CHANNEL_DIR in m for m in apptainer.mounts)
