"""The ``container`` of the jobs snrun submits for itself, from Python: ``bench.BenchJob``,
``doctor.DoctorJob`` and ``health.HealthOptions`` take ``api.ContainerOptions`` or a mapping
of its fields (a spec's form), checked when the job is made; the API's plan functions put the
job in that image (Slurm not asked: the site names its runtime)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm_supernode import api
from slurm_supernode.api import bench, doctor
from slurm_supernode.api.health import HealthOptions
from slurm_supernode.bench.submit import BenchJob
from slurm_supernode.doctor.job import DoctorJob
from slurm_supernode.errors import InputError
from slurm_supernode.launch.container_options import ContainerOptions
from tests.api.helpers import site_file


@pytest.fixture
def oci_site(tmp_path, monkeypatch) -> str:
    from slurm_supernode.launch import facts

    monkeypatch.setattr(facts, "gather_facts", lambda site, required, containers=False: None)
    path = Path(site_file(tmp_path))
    path.write_text(path.read_text() + "containers:\n  runtime: oci\n")
    return str(path)


def _bundle(tmp_path: Path) -> str:
    img = tmp_path / "img"
    (img / "rootfs").mkdir(parents=True)
    (img / "config.json").write_text(json.dumps({"root": {"path": "rootfs"}}))
    return str(img)


def test_the_api_names_the_options_and_every_job_takes_both_forms() -> None:
    assert api.ContainerOptions is ContainerOptions
    given = {"image": "/i.sqsh", "mounts": "/d:/d:ro", "mount_home": False}
    want = ContainerOptions(image="/i.sqsh", mounts="/d:/d:ro", mount_home=False)
    assert BenchJob(container=given).container == want
    assert DoctorJob(container=given).container == want
    assert HealthOptions(node="n0", container=given).container == want
    assert DoctorJob(container=want).container is want
    assert BenchJob(container=None).container == ContainerOptions()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"imgae": "/i"}, r"unknown container option\(s\) imgae"),
        ({"image": 3}, "container image is 3, not text"),
        ({"image": "/i", "mount_home": "yes"}, "not true/false"),
        ("/i.sqsh", "no ContainerOptions or mapping"),
    ],
)
def test_a_bad_container_is_refused_when_the_job_is_made(value, message) -> None:
    for make in (
        lambda: BenchJob(container=value),
        lambda: DoctorJob(container=value),
        lambda: HealthOptions(node="n0", container=value),
    ):
        with pytest.raises(InputError, match=message) as err:
            make()
        assert err.value.where == "container"


def test_the_doctor_and_the_bench_plan_in_the_image_given(oci_site, tmp_path) -> None:
    img = _bundle(tmp_path)
    job = DoctorJob(supernodes="sn0", site_arg=oci_site, container={"image": img, "env": "X"})
    spec = doctor.plan_doctor_job(job, jobs_dir=str(tmp_path / "jobs")).inputs.container_spec()
    assert spec is not None and (spec.runtime, spec.image) == ("oci", img) and "X" in spec.env
    sub = bench.submit_bench(
        BenchJob(supernodes="sn0", site_arg=oci_site, container=ContainerOptions(image=img)),
        dry_run=True,
    )
    assert sub.job_id is None
    spec = sub.plan.inputs.container_spec()
    assert spec is not None and spec.image == img and spec.pythonpath  # snrun's package inside
    # companions without an image are refused, as on the command line
    with pytest.raises(InputError, match="ContainerOptions.mounts without ContainerOptions.image"):
        doctor.plan_doctor_job(DoctorJob(site_arg=oci_site, container={"mounts": "/d:/d"}))
    with pytest.raises(InputError, match="does not exist"):
        doctor.plan_doctor_job(DoctorJob(site_arg=oci_site, container={"image": img + "x"}))
