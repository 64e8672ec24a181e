"""Containers: the options, the site's section, the checks at submit, and what each runtime
renders (pure; the real runtime runs in tests/integration/test_containers.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_supernode.errors import InputError, JobError
from slurm_supernode.launch.container import ContainerSpec, resolve_container
from slurm_supernode.launch.container_options import ContainerOptions
from slurm_supernode.launch.container_render import (
    enter_script,
    oci_bundle_config,
    oci_mount_points,
    passed_env,
)
from slurm_supernode.launch.directives import apply_directives, parse_directives
from slurm_supernode.launch.inputs import JobInputs
from slurm_supernode.runtime.container_launch import plan_container_launch
from slurm_supernode.site.containers import Mount, parse_mount
from slurm_supernode.site.loader import parse_site
from slurm_supernode.site.model import ContainerSettings
from tests.launch.test_render import HOSTILE, plan, site

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ROOT / "site-configs" / "local.yaml"


def bundle(tmp_path: Path) -> Path:
    img = tmp_path / "img"
    (img / "rootfs").mkdir(parents=True)
    config = {
        "root": {"path": "rootfs"},
        "process": {"env": ["PATH=/opt/conda/bin:/usr/bin"], "cwd": "/"},
        "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
        "linux": {"namespaces": [{"type": "pid"}, {"type": "mount"}, {"type": "network"}]},
        "hostname": "img",
    }
    (img / "config.json").write_text(json.dumps(config))
    return img


def with_runtime(runtime: str, **kw):
    return dataclasses.replace(site(), containers=ContainerSettings(runtime=runtime, **kw))


def resolve(runtime: str, tmp_path: Path, **req):
    return resolve_container(
        ContainerOptions(**req),
        with_runtime(runtime),
        job_dir=tmp_path / "jobs" / "j1",
        workdir=str(tmp_path),
        extra_paths=(str(tmp_path / "jobs" / "j1" / "code"),),
    )


# ----- mounts and the site section ------------------------------------------------------------


def test_mount_syntax_is_pyxis_and_refuses_what_a_runtime_would_misread() -> None:
    assert parse_mount("/a") == Mount("/a", "/a")
    assert parse_mount("/a/:/b:ro") == Mount("/a", "/b", True)
    assert parse_mount("/a::rw") == Mount("/a", "/a", False)
    for bad in ("a:/b", "/a:b", "/a:/b:rx", "/a:/b:ro:x", "/a,b:/c", "/a b", "", "/a\n:/b"):
        with pytest.raises(ValueError):
            parse_mount(bad)


def test_site_section_problems_have_line_numbers() -> None:
    text = LOCAL.read_text() + (
        "containers:\n"
        "  runtime: pyxsi\n"
        "  mounts: ['/a:/b:ro', 'rel:/x']\n"
        "  env: [NCCL_DEBUG, 'A=B']\n"
        "  image_dir: images\n"
        "  vendor_mount: true\n"
    )
    first = len(LOCAL.read_text().splitlines()) + 1
    _site, problems = parse_site(text, "s.yaml")
    found = {(p.line, p.message.split(":")[0].split(" ")[0]) for p in problems}
    assert (first + 1, "unknown") in found  # runtime
    assert any(p.line == first + 2 and "'rel'" in p.message for p in problems)
    assert any(p.line == first + 3 and "'A=B'" in p.message for p in problems)
    assert any(p.line == first + 4 and "image_dir" in p.message for p in problems)
    assert any(p.line == first + 5 and "did you mean 'vendor_mounts'" in str(p) for p in problems)


def test_site_section_values_reach_the_model() -> None:
    text = LOCAL.read_text() + (
        "containers:\n  runtime: apptainer\n  python: /opt/py/bin/python\n"
        "  mounts: [/data]\n  vendor_mounts: false\n  env: [NCCL_IB_HCA]\n  image_dir: /img\n"
    )
    site_obj, problems = parse_site(text, "s.yaml")
    assert not problems, problems
    assert site_obj.containers == ContainerSettings(
        "apptainer", "/opt/py/bin/python", "/img", ("/data",), False, ("NCCL_IB_HCA",)
    )


# ----- checks at submit -----------------------------------------------------------------------


def test_a_site_without_runtime_refuses_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="has no container runtime") as err:
        resolve("none", tmp_path, image=str(bundle(tmp_path)))
    assert err.value.where == "--container-image" and "\n" not in str(err.value)


def test_the_sites_runtime_is_checked_against_what_the_cluster_offers(tmp_path: Path) -> None:
    from slurm_supernode.slurm.container_runtimes import ContainerRuntimes

    img = str(bundle(tmp_path))
    only_oci = ContainerRuntimes(
        {"oci": "/etc/slurm/oci.conf"},
        {"pyxis": "no spank_pyxis.so in /etc/slurm/plugstack.conf", "apptainer": "no apptainer"},
    )
    nothing = ContainerRuntimes({}, {"pyxis": "no pyxis here", "oci": "no /etc/slurm/oci.conf"})

    def pick(runtime: str, available):
        return resolve_container(
            ContainerOptions(image=img), with_runtime(runtime), job_dir=tmp_path / "j",
            workdir=str(tmp_path), available=available,
        )  # fmt: skip

    assert pick("oci", only_oci).runtime == "oci"
    assert pick("auto", only_oci).runtime == "oci"  # detected, not assumed
    with pytest.raises(InputError) as err:
        pick("pyxis", only_oci)
    assert err.value.message.startswith("site test runs pyxis, but the running Slurm has none: ")
    assert "/etc/slurm/plugstack.conf" in str(err.value) and "plugstack.conf" in err.value.hint
    with pytest.raises(InputError, match="offers no container runtime .no pyxis here; no /etc"):
        pick("auto", nothing)
    with pytest.raises(InputError, match="Slurm could not be asked"):
        pick("auto", None)  # a dry run without a cluster: only a named runtime plans
    assert pick("oci", None).runtime == "oci"
    with pytest.raises(InputError, match="containers.runtime: none"):
        pick("none", only_oci)


def test_the_sites_runtime_options_reach_each_runtime_and_oci_takes_none(tmp_path: Path) -> None:
    text = LOCAL.read_text() + "containers:\n  runtime: apptainer\n  options: [--userns, nv]\n"
    _site, problems = parse_site(text, "s.yaml")
    assert [p.message for p in problems] == ["containers.options: 'nv' is not an option"]
    oci = LOCAL.read_text() + "containers:\n  runtime: oci\n  options: [--x]\n"
    assert "Slurm OCI takes no options" in str(parse_site(oci, "s.yaml")[1])
    for runtime, image in (("apptainer", "docker://x"), ("pyxis", "registry#img")):
        site_obj = dataclasses.replace(
            site(), containers=ContainerSettings(runtime=runtime, options=("--userns",))
        )
        spec = resolve_container(
            ContainerOptions(image=image), site_obj, job_dir=tmp_path / "j", workdir=str(tmp_path)
        )
        assert spec is not None and spec.options == ("--userns",)
        assert ContainerSpec.from_dict(spec.to_dict()) == spec
        argv = launch_for(spec, tmp_path).argv
        if runtime == "apptainer":
            assert argv[:3] == ["apptainer", "exec", "--userns"]
        else:
            assert argv.index("--userns") < argv.index("/bin/sh")  # an srun option, not torchrun's


@pytest.mark.parametrize("runtime", ["pyxis", "oci", "apptainer"])
def test_a_missing_local_image_is_refused(tmp_path: Path, runtime: str) -> None:
    with pytest.raises(InputError, match="does not exist"):
        resolve(runtime, tmp_path, image=str(tmp_path / "nope.sqsh"))


def test_registry_references_pass_where_the_runtime_imports_them(tmp_path: Path) -> None:
    ref = "nvcr.io#nvidia/pytorch:24.05-py3"
    assert resolve("pyxis", tmp_path, image=ref).image == ref
    assert resolve("apptainer", tmp_path, image="docker://alpine").image == "docker://alpine"
    with pytest.raises(InputError):  # Slurm OCI runs a bundle on disk, nothing else
        resolve("oci", tmp_path, image=ref)


def test_oci_bundle_needs_config_and_root(tmp_path: Path) -> None:
    img = bundle(tmp_path)
    assert resolve("oci", tmp_path, image=str(img)).image == str(img)
    (img / "rootfs").rmdir()
    with pytest.raises(InputError, match="no directory"):
        resolve("oci", tmp_path, image=str(img))
    (img / "config.json").write_text("{")
    with pytest.raises(InputError, match="config.json"):
        resolve("oci", tmp_path, image=str(img))


def test_relative_image_names_resolve_in_the_sites_image_dir(tmp_path: Path) -> None:
    (tmp_path / "img.sqsh").write_text("")
    got = resolve_container(
        ContainerOptions(image="img.sqsh"),
        with_runtime("pyxis", image_dir=str(tmp_path)),
        job_dir=tmp_path / "j",
        workdir=str(tmp_path),
    )
    assert got.image == str(tmp_path / "img.sqsh")


def test_the_job_paths_are_mounted_at_the_same_path_once(tmp_path: Path) -> None:
    spec = resolve("oci", tmp_path, image=str(bundle(tmp_path)), mounts="/data:/mnt:ro,/x")
    job = str(tmp_path / "jobs" / "j1")
    # the workdir holds the job dir and its code snapshot: one mount covers all three
    assert spec.mounts[0] == f"{tmp_path}:{tmp_path}"
    assert not any(m.startswith(job) for m in spec.mounts)
    assert spec.mounts[-2:] == ("/data:/mnt:ro", "/x:/x")
    assert spec.workdir == str(tmp_path)


def test_requests_the_runtime_cannot_serve_are_refused(tmp_path: Path) -> None:
    img = str(bundle(tmp_path))
    with pytest.raises(InputError, match="named containers need pyxis"):
        resolve("oci", tmp_path, image=img, name="keep")
    with pytest.raises(InputError, match="not an absolute path"):
        resolve("oci", tmp_path, image=img, workdir="rel")
    with pytest.raises(InputError, match="bad variable name"):
        resolve("oci", tmp_path, image=img, env="OK,A=B")
    with pytest.raises(InputError, match="absolute"):
        resolve("oci", tmp_path, image=img, mounts="data:/mnt")


def test_container_options_without_an_image_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--container-mounts without --container-image"):
        plan(tmp_path, container=ContainerOptions(mounts="/a"))


def test_plan_json_keeps_the_container_and_old_plans_still_read(tmp_path: Path) -> None:
    site_obj = dataclasses.replace(
        site(), containers=ContainerSettings(runtime="oci", python="/py")
    )
    from slurm_supernode.launch.job import plan_job
    from slurm_supernode.launch.jobspec import JobSpec

    p = plan_job(
        JobSpec(
            program="train.py",
            workdir=str(tmp_path),
            snapshot=False,
            container=ContainerOptions(image=str(bundle(tmp_path))),
        ),
        site_obj,
        None,
        jobs_root=tmp_path / "jobs",
        token="t0",
    )
    back = JobInputs.from_dict(json.loads(p.inputs.to_json()))
    assert back.container_spec() == ContainerSpec.from_dict(p.inputs.container)
    assert back.container_spec().python == "/py"
    old = p.inputs.to_dict()
    del old["container"]
    assert JobInputs.from_dict(old).container_spec() is None
    with pytest.raises(JobError, match="bad container"):
        ContainerSpec.from_dict({**p.inputs.container, "runtime": "docker"})


def test_sbatch_lines_set_the_container_and_never_reach_sbatch() -> None:
    text = (
        "#SBATCH --container-image=/img.sqsh --container-mounts /a:/b\n"
        "#SBATCH --no-container-mount-home --container-env=X,Y\nimport os\n"
    )
    found = parse_directives(text, "t.py")
    out = apply_directives({"container.image": None}, found)
    assert out == {
        "container.image": "/img.sqsh",
        "container.mounts": "/a:/b",
        "container.mount_home": False,
        "container.env": "X,Y",
    }
    assert apply_directives({"container.image": "/cli.sqsh"}, found)["container.mounts"] == "/a:/b"
    assert "container.image" not in apply_directives({"container.image": "/cli.sqsh"}, found)


def test_sbatch_container_lines_fill_what_the_command_line_left_unset(tmp_path: Path) -> None:
    """Option by option, as sbatch: the spec's image and mounts win, the script's env and
    mount_home come in; no container option anywhere leaves the spec without a container."""
    from slurm_supernode.api.planning import with_directives
    from slurm_supernode.launch.jobspec import JobSpec

    script = tmp_path / "t.py"
    script.write_text(
        "#SBATCH --container-image=/img.sqsh --container-mounts /a:/b\n"
        "#SBATCH --no-container-mount-home --container-env=X,Y\nimport os\n"
    )
    given = ContainerOptions(image="/cli.sqsh", mounts="/c")
    spec, _ = with_directives(JobSpec(program="t.py", workdir=str(tmp_path), container=given))
    assert spec.container == ContainerOptions(
        image="/cli.sqsh", mounts="/c", env="X,Y", mount_home=False
    )
    spec, _ = with_directives(JobSpec(program="t.py", workdir=str(tmp_path)))
    assert spec.container == ContainerOptions(
        image="/img.sqsh", mounts="/a:/b", env="X,Y", mount_home=False
    )
    script.write_text("import os\n")
    assert with_directives(JobSpec(program="t.py", workdir=str(tmp_path)))[0].container is None


# ----- rendering --------------------------------------------------------------------------------


def test_enter_script_keeps_hostile_values_literal(tmp_path: Path) -> None:
    env = {f"V{i}": v for i, v in enumerate(HOSTILE)}
    script = tmp_path / "enter.sh"
    started = tmp_path / "it's started"
    script.write_text(enter_script(env, str(tmp_path), str(started)))
    out = subprocess.run(
        ["/bin/sh", str(script), sys.executable, "-c",
         "import json, os, signal; print(json.dumps([dict(os.environ), os.getcwd(), "
         "signal.getsignal(signal.SIGUSR2) == signal.SIG_IGN]))"],
        capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    seen, cwd, ignored = json.loads(out.stdout)
    assert {k: seen[k] for k in env} == env
    assert cwd == str(tmp_path) and ignored
    assert not started.exists()  # torchrun's python makes it (fast_exit), not the shell
    assert not Path("/tmp/snrun-pwned").exists()


def test_passed_env_is_snruns_the_named_and_what_the_agent_changed() -> None:
    base = {"PATH": "/host/bin", "HOME": "/root", "FOO": "1", "NCCL_DEBUG": "WARN", "X": "a"}
    env = base | {"CUDA_VISIBLE_DEVICES": "0,1", "X": "b", "SNRUN_NODE_RANK": "1"}
    got = passed_env(env, base, ["FOO"])
    assert got == {
        "FOO": "1",
        "NCCL_DEBUG": "WARN",
        "X": "b",
        "CUDA_VISIBLE_DEVICES": "0,1",
        "SNRUN_NODE_RANK": "1",
    }


def test_oci_config_drops_the_pid_namespace_and_adds_the_job_mounts(tmp_path: Path) -> None:
    img = bundle(tmp_path)
    image_config = json.loads((img / "config.json").read_text())
    spec = resolve("oci", tmp_path, image=str(img), mounts="/data:/mnt:ro", mount_home=True)
    mounts = [parse_mount(m) for m in spec.mounts]
    config = oci_bundle_config(image_config, spec, mounts, "/home/u")
    # the image's root by its absolute path, nothing mounted over / (runc >= 1.2 refuses it)
    assert config["root"] == {"path": str(img / "rootfs"), "readonly": False}
    assert [n["type"] for n in config["linux"]["namespaces"]] == ["mount"]
    dests = [m["destination"] for m in config["mounts"]]
    assert dests == ["/proc", str(tmp_path), "/mnt", "/home/u"]
    assert config["mounts"][2]["options"] == ["rbind", "ro"]
    assert "hostname" not in config  # no UTS namespace: runc refuses a hostname then
    assert config["process"]["cwd"] == spec.workdir
    assert config["process"]["env"] == ["PATH=/opt/conda/bin:/usr/bin"]  # the image's stays
    assert image_config["linux"]["namespaces"][0] == {"type": "pid"}  # not modified in place
    image_config["root"] = {"path": str(img / "rootfs"), "readonly": True}  # absolute, read-only
    assert oci_bundle_config(image_config, spec, mounts, None)["root"] == image_config["root"]


@pytest.mark.parametrize(
    ("runtime", "version", "in_bundle"),
    [("oci", (22, 5, 8), True), ("oci", (23, 2, 0), False), ("oci", (26, 5, 1), False),
     ("oci", None, False), ("apptainer", (22, 5, 8), False)],
)  # fmt: skip
def test_slurm_before_23_02_gets_the_image_root_inside_the_bundle(
    tmp_path: Path, runtime: str, version, in_bundle: bool
) -> None:
    """Slurm 22.05 takes the root from BUNDLE/rootfs whatever config.json says (measured: an
    absolute root.path failed with runc's `invalid rootfs: stat BUNDLE/rootfs`): its bundle
    gets an empty rootfs with the image's root mounted over /; later Slurm the root.path."""
    img = bundle(tmp_path)
    spec = resolve_container(
        ContainerOptions(image=str(img) if runtime == "oci" else "docker://x"),
        with_runtime(runtime),
        job_dir=tmp_path / "j",
        workdir=str(tmp_path),
        slurm_version=version,
    )
    assert spec is not None and spec.oci_rootfs_in_bundle is in_bundle
    assert ContainerSpec.from_dict(spec.to_dict()) == spec  # kept in plan.json
    if runtime != "oci":
        return
    launch = launch_for(spec, tmp_path)
    base = f"{tmp_path}/jobs/j1/container/n1.2"
    config = json.loads(launch.files[f"{base}/config.json"])
    first = config["mounts"][0]
    if in_bundle:
        assert config["root"] == {"path": "rootfs", "readonly": False}
        assert (first["destination"], first["source"]) == ("/", str(img / "rootfs"))
        assert launch.dirs[0] == f"{base}/rootfs"
    else:
        assert config["root"]["path"] == str(img / "rootfs") and first["destination"] != "/"
        assert f"{base}/rootfs" not in launch.dirs


def test_oci_mount_points_are_the_directory_binds_inside_the_image_root(tmp_path: Path) -> None:
    """Made by the agent before runc: two containers sharing one image root (a shared file
    system; one machine in the test clusters) raced in runc's mkdir of the same destination."""
    img = bundle(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "a-file").write_text("x")
    spec = resolve(
        "oci", tmp_path, image=str(img), mounts=f"{data}:/mnt:ro,{tmp_path}/a-file:/etc/x",
        mount_home=True,
    )  # fmt: skip
    mounts = [parse_mount(m) for m in spec.mounts]
    config = json.loads((img / "config.json").read_text())
    points = oci_mount_points(config, spec, mounts, str(tmp_path))
    # directories only (a file bind needs a file, runc makes that); home too; all in the image
    inside = str(img / "rootfs" / str(tmp_path).lstrip("/"))  # the job's folder, and home
    assert sorted(points) == sorted([str(img / "rootfs" / "mnt"), inside])
    plan_ = launch_for(dataclasses.replace(spec, mounts=(f"{data}:/mnt",)), tmp_path)
    assert str(img / "rootfs" / "mnt") in plan_.mount_points


def launch_for(spec: ContainerSpec, tmp_path: Path, exists=lambda _p: False):
    torchrun = ["/host/python", "-m", "torch.distributed.run", "--nnodes=2", "train.py"]
    return plan_container_launch(
        spec,
        torchrun,
        {"SNRUN_NODE_RANK": "1", "PATH": "/host"},
        base_env={"PATH": "/host"},
        names=[],
        job_dir=tmp_path / "jobs" / "j1",
        hostname="n1",
        attempt=2,
        job_id=77,
        vendor="nvidia",
        image_config={"root": {"path": "rootfs"}},
        exists=exists,
        mount_dev=lambda: "minimal",  # Apptainer's staged /dev: it takes /dev binds as given
    )


def test_each_runtime_runs_the_same_inner_command(tmp_path: Path) -> None:
    (tmp_path / "img.sqsh").write_text("")
    enter = str(tmp_path / "jobs" / "j1" / "container" / "n1.2.enter.sh")
    inner = ["/bin/sh", enter, "python3", "-m", "torch.distributed.run", "--nnodes=2", "train.py"]
    pyxis = launch_for(
        resolve("pyxis", tmp_path, image=str(tmp_path / "img.sqsh"), name="keep"), tmp_path
    )
    assert pyxis.via_srun and pyxis.argv[-len(inner) :] == inner
    assert pyxis.argv[:5] == ["srun", "--jobid=77", "--overlap", "--nodelist=n1", "--nodes=1"]
    assert f"--container-image={tmp_path / 'img.sqsh'}" in pyxis.argv
    assert "--container-name=keep" in pyxis.argv
    assert f"--container-workdir={tmp_path}" in pyxis.argv
    oci = launch_for(resolve("oci", tmp_path, image=str(bundle(tmp_path))), tmp_path)
    bundle_dir = str(tmp_path / "jobs" / "j1" / "container" / "n1.2")
    assert f"--container={bundle_dir}" in oci.argv and oci.argv[-len(inner) :] == inner
    config = json.loads(oci.files[f"{bundle_dir}/config.json"])
    assert config["root"]["path"] == str(tmp_path / "img" / "rootfs")
    assert "/" not in [m["destination"] for m in config["mounts"]]
    assert oci.dirs == ()  # the bundle is its config.json: no rootfs of its own
    app = launch_for(resolve("apptainer", tmp_path, image="docker://x"), tmp_path)
    assert not app.via_srun
    assert app.argv[:3] == ["apptainer", "exec", "--nv"]
    assert app.argv[-len(inner) - 1 :] == ["docker://x", *inner]
    for launch in (pyxis, oci, app):
        assert "export SNRUN_NODE_RANK=1" in launch.files[enter]
        assert "PATH" not in launch.files[enter].replace("PYTHONPATH", "")


def test_vendor_mounts_only_where_the_node_has_them(tmp_path: Path) -> None:
    spec = resolve("apptainer", tmp_path, image="docker://x")
    assert spec.optional_mounts == ("/dev/infiniband",)
    without = launch_for(spec, tmp_path, exists=lambda _p: False)
    with_ib = launch_for(spec, tmp_path, exists=lambda p: p == "/dev/infiniband")
    assert "/dev/infiniband:/dev/infiniband" not in without.mounts
    assert "/dev/infiniband:/dev/infiniband" in with_ib.mounts


# ----- through the CLI --------------------------------------------------------------------------


def snrun(tmp_path: Path, site_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), SLURM_CONF="/nonexistent/slurm.conf")
    return subprocess.run(
        [sys.executable, "-m", "slurm_supernode", "--site", str(site_file), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )


def test_dry_run_shows_what_every_node_runs(tmp_path: Path) -> None:
    img = bundle(tmp_path)
    site_file = tmp_path / "site.yaml"
    site_file.write_text(LOCAL.read_text() + "containers:\n  runtime: oci\n  python: /py\n")
    (tmp_path / "train.py").write_text(f"#SBATCH --container-image={img}\nprint(1)\n")
    out = snrun(tmp_path, site_file, "-N", "2", "--allow-partial", "--dry-run", "train.py")
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line.startswith(("# n0: ", "# n1: "))]
    assert len(lines) == 2
    assert all(
        "--container=" in line
        and " /py /" in line
        and "/fast_exit.py -m torch.distributed.run " in line
        for line in lines
    )
    assert "--node-rank=1" in lines[1]
    assert "--container-image" not in out.stdout.split("# --- #SBATCH")[0]  # not for sbatch
    as_json = snrun(tmp_path, site_file, "-N", "2", "--allow-partial", "--dry-run", "--json",
                    "train.py")  # fmt: skip
    commands = json.loads(as_json.stdout)["node_commands"]
    assert [c["node"] for c in commands] == ["n0", "n1"]


def test_cli_refusal_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("")
    out = snrun(tmp_path, LOCAL, "--dry-run", "--container-image=/nope.sqsh", "train.py")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert out.stderr.startswith("snrun: error: --container-image: site local has no container")
