"""Apptainer's /dev: a /dev path is bound only where the container's /dev is staged (a user
--bind is nodev: binding the host's /dev paths again would make their devices unopenable)."""

from __future__ import annotations

from pathlib import Path

from slurm_supernode.runtime import apptainer_dev
from slurm_supernode.runtime.apptainer_dev import (
    apptainer_binds,
    host_dev,
    mount_dev_setting,
    node_mount_dev,
)
from slurm_supernode.site.containers import Mount

CHANNELS = Mount("/dev/nvidia-caps-imex-channels", "/dev/nvidia-caps-imex-channels")
MOUNTS = [Mount("/job", "/job"), CHANNELS, Mount("/dev/infiniband", "/dev/infiniband", True)]


def test_mount_dev_is_read_from_apptainer_conf_with_yes_by_default():
    assert mount_dev_setting(None) == "yes" and mount_dev_setting("# mount dev = no\n") == "yes"
    conf = "mount proc = yes\nmount dev = minimal\nmount devpts = yes\n"
    assert mount_dev_setting(conf) == "minimal"
    assert mount_dev_setting("MOUNT DEV = No\n") == "no"


def test_the_hosts_dev_comes_whole_unless_contained_or_minimal():
    assert host_dev([], "yes") and host_dev(["--userns", "--nv"], "yes")
    for contain in ("-c", "--contain", "-C", "--containall"):
        assert not host_dev(["--userns", contain], "yes")
    assert not host_dev([], "minimal") and not host_dev([], "no")


def test_dev_paths_are_left_to_the_hosts_dev_and_bound_into_a_staged_one():
    assert apptainer_binds(MOUNTS, ["--userns"], "yes") == [Mount("/job", "/job")]
    assert apptainer_binds(MOUNTS, ["--containall"], "yes") == MOUNTS
    assert apptainer_binds(MOUNTS, [], "minimal") == MOUNTS
    # a /dev path bound elsewhere is not a device of /dev (Apptainer skips it): left as given
    other = [Mount("/dev/shm/data", "/data")]
    assert apptainer_binds(other, [], "yes") == other


def test_the_nodes_conf_is_found_through_buildcfg(tmp_path: Path, monkeypatch):
    (tmp_path / "apptainer").mkdir()
    (tmp_path / "apptainer" / "apptainer.conf").write_text("mount dev = minimal\n")
    calls = []

    def fake(argv, timeout):
        calls.append(argv)
        return 0, f"{tmp_path}\n"

    monkeypatch.setattr(apptainer_dev, "run_tool", fake)
    assert node_mount_dev() == "minimal"
    assert calls == [["apptainer", "buildcfg", "SYSCONFDIR"]]
    monkeypatch.setattr(apptainer_dev, "run_tool", lambda argv, timeout: (127, "not found"))
    assert node_mount_dev() == "yes"
    monkeypatch.setattr(apptainer_dev, "run_tool", lambda a, timeout: (0, "/nonexistent\n"))
    assert node_mount_dev() == "yes"
