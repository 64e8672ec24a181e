"""Container runtimes read from the running Slurm: plugstack.conf (pyxis), oci.conf (Slurm
OCI), `apptainer --version`; with fake clients on PATH (the real ones: the container
integration tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_supernode.slurm.container_runtimes import (
    detect_container_runtimes,
    runtimes_from,
)


def conf_dir(tmp_path: Path) -> Path:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "slurm.conf").write_text("ClusterName=x\n")
    return etc


def test_nothing_configured_says_where_each_was_looked_for(tmp_path: Path) -> None:
    etc = conf_dir(tmp_path)
    found = runtimes_from({"SLURM_CONF": str(etc / "slurm.conf"), "PlugStackConfig": "(null)"})
    assert found.found == {} and found.first() is None
    assert found.missing["pyxis"] == f"no spank_pyxis.so in {etc}/plugstack.conf"
    assert found.missing["oci"] == f"no {etc}/oci.conf"
    assert found.missing["apptainer"] == "no apptainer on PATH"


def test_pyxis_through_an_include_and_oci_beside_slurm_conf(tmp_path: Path) -> None:
    etc = conf_dir(tmp_path)
    (etc / "plugstack.conf.d").mkdir()
    (etc / "plugstack.conf").write_text(
        "# required /usr/lib/spank_pyxis.so (a comment loads nothing)\n"
        "include plugstack.conf.d/*.conf\n"
    )
    (etc / "plugstack.conf.d" / "other.conf").write_text("optional /x/other.so\n")
    (etc / "plugstack.conf.d" / "pyxis.conf").write_text(
        "required /opt/pyxis/lib/spank_pyxis.so runtime_path=/run/pyxis\n"
    )
    (etc / "oci.conf").write_text('RunTimeRun="runc run %n -b %b"\n')
    found = runtimes_from(
        {"SLURM_CONF": str(etc / "slurm.conf")}, apptainer_version="apptainer version 1.4.5\n"
    )
    assert found.found == {
        "pyxis": f"spank_pyxis.so in {etc}/plugstack.conf.d/pyxis.conf",
        "oci": f"{etc}/oci.conf",
        "apptainer": "apptainer version 1.4.5",
    }
    assert found.first() == "pyxis" and found.missing == {}


def test_a_commented_out_pyxis_and_another_plugstack_path(tmp_path: Path) -> None:
    etc = conf_dir(tmp_path)
    other = tmp_path / "spank.conf"
    other.write_text("#required /opt/pyxis/lib/spank_pyxis.so\n")
    (etc / "plugstack.conf").write_text("required /opt/pyxis/lib/spank_pyxis.so\n")  # not read
    found = runtimes_from({"SLURM_CONF": str(etc / "slurm.conf"), "PlugStackConfig": str(other)})
    assert "pyxis" not in found.found and str(other) in found.missing["pyxis"]


@pytest.mark.parametrize("apptainer", ["echo 'apptainer version 1.4.5'", "exit 127", None])
def test_detect_asks_scontrol_and_apptainer(fake_bin, tmp_path: Path, apptainer) -> None:
    etc = conf_dir(tmp_path)
    (etc / "oci.conf").write_text("")
    fake_bin(
        "scontrol",
        "echo 'PlugStackConfig         = (null)'\n"
        f"echo 'SLURM_CONF              = {etc}/slurm.conf'",
    )
    if apptainer is not None:
        fake_bin("apptainer", apptainer)
    found = detect_container_runtimes()
    assert set(found.found) == ({"oci", "apptainer"} if "echo" in (apptainer or "") else {"oci"})
    assert found.first() == "oci"
