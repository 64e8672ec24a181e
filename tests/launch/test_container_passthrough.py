"""Slurm's own container options given through snrun to sbatch (`--sbatch=--container=B`,
`#SBATCH --container=B`, pyxis' `--container-image` as a raw sbatch option) are refused at
submit with the fix in one line: they would run the whole job in the container, and a bundle
made by `runc spec` has a PID namespace that hangs torchrun's rendezvous."""

from __future__ import annotations

import json

import pytest

from slurm_supernode.cli.main import main

RUNC_SPEC = {  # what `runc spec` writes (the namespaces part)
    "ociVersion": "1.0.2",
    "process": {"args": ["sh"], "cwd": "/"},
    "root": {"path": "rootfs", "readonly": True},
    "linux": {"namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")]},
}


@pytest.fixture
def bundle(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "none.conf"))
    (tmp_path / "bundle" / "rootfs").mkdir(parents=True)
    (tmp_path / "bundle" / "config.json").write_text(json.dumps(RUNC_SPEC))
    (tmp_path / "train.py").write_text("print(1)\n")
    return tmp_path / "bundle"


def refused(capsys, *argv: str) -> str:
    code = main(["--site", "local", "-S", "1", "--dry-run", *argv])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    return err


def test_a_runc_spec_bundle_through_sbatch_is_refused_with_the_fix(bundle, capsys):
    err = refused(capsys, f"--sbatch=--container={bundle}", "train.py")
    assert "PID namespace" in err and f"--container-image {bundle}" in err


def test_as_an_sbatch_line_of_the_script_too(bundle, capsys):
    (bundle.parent / "train.py").write_text(f"#SBATCH --container={bundle}\nprint(1)\n")
    err = refused(capsys, "train.py")
    assert "sbatch --container=" in err and "--container-image" in err


def test_pyxis_image_as_a_raw_sbatch_option(bundle, capsys):
    err = refused(capsys, "--sbatch=--container-image=/img.sqsh", "train.py")
    assert "whole job" in err and "--container-image /img.sqsh" in err


def test_snruns_own_option_runs_it_without_the_pid_namespace(bundle, tmp_path):
    """`--container-image BUNDLE` is the fix: each node's bundle drops the PID namespace."""
    from slurm_supernode.launch.container_render import oci_bundle_config
    from tests.launch.test_container import resolve

    spec = resolve("oci", tmp_path, image=str(bundle))
    config = oci_bundle_config(RUNC_SPEC, spec, [], None)
    assert [ns["type"] for ns in config["linux"]["namespaces"]] == ["ipc", "mount"]
