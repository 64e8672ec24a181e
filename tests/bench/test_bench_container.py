"""bench and doctor in an image: the --container-* options on their jobs, the site's
bench.container_image, snrun's own package mounted in, a schedule that stores the options, and
what each node's agent then renders (pure; tests/integration/test_containers.py runs one)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from slurm_supernode.bench.stored_spec import SpecError, spec_from_dict, spec_to_dict
from slurm_supernode.bench.submit import BenchJob, plan_bench
from slurm_supernode.doctor.job import DoctorJob, plan_doctor
from slurm_supernode.errors import InputError
from slurm_supernode.launch.container import ContainerSpec
from slurm_supernode.launch.container_options import ContainerOptions
from slurm_supernode.runtime.container_launch import plan_container_launch
from slurm_supernode.site.loader import load_site, parse_site

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = str(ROOT / "slurm_supernode")


def site_with(tmp_path: Path, bench_image: str | None = None):
    """local.yaml on Slurm OCI (named: no cluster asked), and the bench's image if given."""
    text = (ROOT / "site-configs" / "local.yaml").read_text() + "containers:\n  runtime: oci\n"
    if bench_image is not None:
        text = text.replace("bench:\n", f"bench:\n  container_image: {bench_image}\n", 1)
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return load_site(str(path))


def oci_image(tmp_path: Path, name: str = "img") -> Path:
    img = tmp_path / name
    (img / "rootfs").mkdir(parents=True)
    (img / "config.json").write_text(json.dumps({"root": {"path": "rootfs"}}))
    return img


def container_of(plan) -> ContainerSpec:
    spec = plan.inputs.container_spec()
    assert spec is not None
    return spec


def test_the_sites_bench_image_is_the_default_and_the_command_line_wins(tmp_path: Path) -> None:
    nightly, other = oci_image(tmp_path), oci_image(tmp_path, "other")
    site = site_with(tmp_path, str(nightly))
    assert site.bench.container_image == str(nightly)
    plan = plan_bench(site, BenchJob(supernodes="sn0"), jobs_root=tmp_path, stamp=0, token="a")
    spec = container_of(plan)
    assert (spec.runtime, spec.image) == ("oci", str(nightly))
    # snrun's own package, read-only inside the job directory, first on PYTHONPATH: the
    # image's python runs `-m slurm_supernode bench run` without snrun installed
    lib = plan.job_dir / "snrun-lib"
    assert f"{PACKAGE}:{lib / 'slurm_supernode'}:ro" in spec.mounts
    assert spec.pythonpath == (str(lib),)
    asked = ContainerOptions(image=str(other), mounts="/data:/data:ro", env="WANDB_MODE")
    plan = plan_bench(site, BenchJob(supernodes="sn0", container=asked), jobs_root=tmp_path)
    spec = container_of(plan)
    assert spec.image == str(other) and "/data:/data:ro" in spec.mounts
    assert "WANDB_MODE" in spec.env
    # options without an image take the site's image
    plan = plan_bench(
        site, BenchJob(container=ContainerOptions(mounts="/d:/d")), jobs_root=tmp_path
    )
    assert container_of(plan).image == str(nightly) and "/d:/d" in container_of(plan).mounts


def test_without_an_image_the_bench_runs_on_the_host(tmp_path: Path) -> None:
    plan = plan_bench(site_with(tmp_path), BenchJob(supernodes="sn0"), jobs_root=tmp_path)
    assert plan.inputs.container is None
    with pytest.raises(InputError, match="--container-mounts without --container-image"):
        plan_bench(
            site_with(tmp_path),
            BenchJob(container=ContainerOptions(mounts="/d:/d")),
            jobs_root=tmp_path,
        )
    with pytest.raises(InputError, match="does not exist"):
        plan_bench(site_with(tmp_path, str(tmp_path / "gone")), BenchJob(), jobs_root=tmp_path)


def test_the_doctor_job_runs_in_the_image_asked(tmp_path: Path) -> None:
    img = oci_image(tmp_path)
    site = site_with(tmp_path, str(oci_image(tmp_path, "nightly")))
    plan = plan_doctor(site, DoctorJob(supernodes="sn0"), jobs_root=tmp_path)
    assert plan.inputs.container is None  # the bench's image is the bench's only
    job = DoctorJob(supernodes="sn0", container=ContainerOptions(image=str(img)))
    spec = container_of(plan_doctor(site, job, jobs_root=tmp_path))
    assert spec.image == str(img) and spec.pythonpath
    assert any(m.startswith(f"{PACKAGE}:") for m in spec.mounts)


def test_a_users_job_gets_no_snrun_package(tmp_path: Path) -> None:
    from slurm_supernode.launch.job import plan_job
    from slurm_supernode.launch.jobspec import JobSpec

    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    spec = JobSpec(
        program=str(script),
        supernodes=1,
        container=ContainerOptions(image=str(oci_image(tmp_path))),
    )
    plan = plan_job(spec, site_with(tmp_path), None, jobs_root=tmp_path)
    assert container_of(plan).pythonpath == ()
    assert not any("snrun-lib" in m for m in container_of(plan).mounts)


def test_the_node_puts_snrun_first_on_pythonpath_and_makes_the_mount_point(tmp_path) -> None:
    site = site_with(tmp_path, str(oci_image(tmp_path)))
    plan = plan_bench(site, BenchJob(supernodes="sn0"), jobs_root=tmp_path)
    spec = container_of(plan)
    launch = plan_container_launch(
        spec,
        ["/host/python", "-m", "torch.distributed.run", "-m", "slurm_supernode", "bench"],
        {"PYTHONPATH": "/user/lib", "SNRUN_NODE_RANK": "0"},
        base_env={},
        names=[],
        job_dir=plan.job_dir,
        hostname="n0",
        attempt=0,
        job_id=5,
        vendor="nvidia",
        image_config={"root": {"path": "rootfs"}},
    )
    enter = launch.files[f"{plan.job_dir}/container/n0.0.enter.sh"]
    assert f"export PYTHONPATH={plan.job_dir}/snrun-lib:/user/lib\n" in enter
    assert str(plan.job_dir / "snrun-lib" / "slurm_supernode") in launch.dirs


def test_a_schedule_stores_the_container_options(tmp_path: Path) -> None:
    asked = ContainerOptions(image="/img", mounts="/a:/b:ro", mount_home=False)
    job = BenchJob(site_arg="lab", container=asked)
    data = json.loads(json.dumps(spec_to_dict(job)))
    assert data["container"] == {"image": "/img", "mounts": "/a:/b:ro", "mount_home": False}
    assert spec_from_dict(data, site="lab") == job
    del data["container"]  # none given (and specs stored before bench ran in images)
    assert spec_from_dict(data, site="lab") == BenchJob(site_arg="lab")
    assert "container" not in spec_to_dict(BenchJob(site_arg="lab"))
    for bad, why in (
        ([], "container is [], not an object"),
        ({"image": 3}, "container image is 3, not text"),
        ({"mount_home": "no"}, "not true/false"),
        ({"imag": "/x"}, "unknown container option(s) imag"),
    ):
        with pytest.raises(SpecError) as err:
            spec_from_dict({**data, "container": bad}, site="lab")
        assert why in str(err.value)


def test_the_site_setting_is_checked_with_its_line(tmp_path: Path) -> None:
    text = (ROOT / "site-configs" / "local.yaml").read_text()
    bad = text.replace("bench:\n", "bench:\n  container_image: [a]\n", 1)
    line = bad.splitlines().index("  container_image: [a]") + 1
    _site, problems = parse_site(bad, "bad.yaml")
    assert [(p.line, p.message) for p in problems] == [
        (line, "bench.container_image must be a string, got a list")
    ]


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["bench", "schedule", "--list", "--container-image", "/i"], "bench schedule"),
        (["doctor", "--facts", "f.json", "--container-mounts", "/a"], "doctor"),
    ],
)
def test_container_options_where_no_job_is_made_are_refused(argv, why, capsys) -> None:
    from slurm_supernode.cli.main import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    flag = next(a for a in argv if a.startswith("--container"))
    assert len(err) == 1 and err[0].startswith(f"snrun {why}: error: {flag}:"), err


def test_the_cli_passes_every_container_option(tmp_path: Path) -> None:
    from slurm_supernode.cli import bench_schedule
    from slurm_supernode.cli.submit import add_container_arguments

    p = argparse.ArgumentParser()
    bench_schedule.add_job_options(p)
    ns = p.parse_args(
        ["--container-image", "/i", "--container-mounts", "/a", "--container-mounts", "/b:/c",
         "--container-env", "X", "--container-workdir", "/w", "--container-name", "n",
         "--no-container-mount-home"]
    )  # fmt: skip
    assert bench_schedule.bench_job(ns).container == ContainerOptions(
        image="/i", mounts="/a,/b:/c", workdir="/w", env="X", name="n", mount_home=False
    )
    assert add_container_arguments  # the same options as snrun's own
