"""`snrun health --allreduce --container-image`: the all-reduce in the image, the node checks
on the host, with fake runtimes (apptainer, pyxis' srun) and a fake python in the image that
records what it was given; tests/integration/test_containers.py runs the real ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm_supernode.api.health import HealthOptions, check_node
from slurm_supernode.cli.main import main
from slurm_supernode.errors import InputError
from slurm_supernode.launch.container_options import ContainerOptions
from slurm_supernode.slurm import container_runtimes
from tests.health.test_cli import _site

PACKAGE = str(Path(__file__).resolve().parents[2] / "slurm_supernode")
OK_LINE = (
    'snrun-health-allreduce: {"name": "allreduce", "status": 0, '
    '"message": "gloo all-reduce of 2 ranks ok in 0.1 s"}'
)


def _exe(path: Path, text: str) -> str:
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def image_site(tmp_path, monkeypatch):
    """A site whose python in the image is a fake that records its arguments and
    PYTHONPATH and prints an all-reduce result; fake apptainer and srun that run the command
    they are given (what a runtime does, minus the image); ``use(runtime)`` picks one."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    seen = tmp_path / "seen"
    python = _exe(
        tmp_path / "py",
        f"#!/bin/sh\necho \"$PYTHONPATH|$SNRUN_TEST_VAR|$*\" > {seen}\necho '{OK_LINE}'\n",
    )
    _exe(
        bindir / "apptainer",
        f'#!/bin/bash\necho "$*" > {tmp_path}/argv\n'
        'while [ "$1" != --pwd ]; do shift; done\nshift 3\nexec "$@"\n',
    )
    _exe(
        bindir / "srun",
        f'#!/bin/bash\necho "$*" > {tmp_path}/argv\n'
        'while [ "$1" != --quiet ]; do shift; done\nshift\n'
        'while [[ "$1" == --container* ]]; do shift; done\nexec "$@"\n',
    )
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.delenv("SLURM_SCRIPT_CONTEXT", raising=False)
    monkeypatch.delenv("SNRUN_SITE", raising=False)
    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.setenv("SNRUN_TEST_VAR", "passed")
    img = tmp_path / "img.sif"
    img.write_text("")

    class Env:
        def use(self, runtime: str) -> str:
            found = container_runtimes.ContainerRuntimes(found={runtime: "fake"})
            monkeypatch.setattr(container_runtimes, "detect_container_runtimes", lambda: found)
            extra = f"containers:\n  runtime: {runtime}\n  python: {python}\n"
            return _site(tmp_path, 4, extra=extra, name=f"{runtime}.yaml")

        image = str(img)
        argv = tmp_path / "argv"

        def seen(self) -> list[str]:
            return seen.read_text().strip().split("|")

    return Env()


def _options(image: str, **kw) -> HealthOptions:
    return HealthOptions(
        node="n0", allreduce=True, allreduce_backend="gloo",
        container=ContainerOptions(image=image, **kw),
    )  # fmt: skip


def test_apptainer_runs_the_allreduce_in_the_image_and_the_node_checks_on_the_host(image_site):
    site = image_site.use("apptainer")
    outcome = check_node(_options(image_site.image, mounts="/data:/data:ro"), site=site)
    assert [(r.name, r.status) for r in outcome.results] == [("devices", 0), ("allreduce", 0)]
    assert outcome.results[1].message == (
        f"gloo all-reduce of 2 ranks ok in 0.1 s (in the apptainer image {image_site.image})"
    )
    pythonpath, var, args = image_site.seen()
    # snrun's package, mounted read-only from the host, first on the image's PYTHONPATH
    lib = pythonpath.split(":")[0]
    assert lib.endswith("/snrun-lib") and var == "passed"
    assert args.split() == ["-m", "slurm_supernode.health.allreduce", "check", "2", "gloo", "30"]
    argv = image_site.argv.read_text()
    assert argv.startswith("exec ") and f"{PACKAGE}:{lib}/slurm_supernode:ro" in argv
    assert "/data:/data:ro" in argv and image_site.image in argv.split()


def test_pyxis_runs_it_as_a_step_of_the_job_and_is_refused_outside_one(image_site, monkeypatch):
    site = image_site.use("pyxis")
    with pytest.raises(InputError, match="only as a step of a job") as err:
        check_node(_options(image_site.image), site=site)
    assert err.value.where == "ContainerOptions.image"  # the API's words
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("SLURM_SCRIPT_CONTEXT", "prolog_slurmd")  # no step starts in a prolog
    with pytest.raises(InputError, match="only as a step of a job"):
        check_node(_options(image_site.image), site=site)
    monkeypatch.delenv("SLURM_SCRIPT_CONTEXT")
    outcome = check_node(_options(image_site.image, name="hc"), site=site)
    assert outcome.status == 0, outcome.results
    argv = image_site.argv.read_text().split()
    assert argv[:4] == ["--jobid=42", "--overlap", "--nodelist=n0", "--nodes=1"]
    assert f"--container-image={image_site.image}" in argv and "--container-name=hc" in argv


def test_an_image_that_does_not_start_is_unknown_not_a_drain(image_site, tmp_path):
    site = image_site.use("apptainer")
    _exe(
        tmp_path / "bin" / "apptainer",
        "#!/bin/sh\necho 'FATAL:   could not open image: bad magic' >&2\nexit 255\n",
    )
    outcome = check_node(_options(image_site.image), site=site)
    allreduce = outcome.results[-1]
    assert allreduce.status == 3 and outcome.status == 3
    assert allreduce.message == (
        f"the apptainer image {image_site.image} did not start: "
        "FATAL:   could not open image: bad magic"
    )


def test_a_failing_allreduce_in_the_image_is_critical(image_site, tmp_path):
    site = image_site.use("apptainer")
    # the image's python starts (the enter script ran) but dies before any result
    _exe(tmp_path / "py", "#!/bin/sh\necho 'ImportError: libnccl.so.2' >&2\nexit 1\n")
    outcome = check_node(_options(image_site.image), site=site)
    assert outcome.status == 2
    assert outcome.results[-1].message.endswith("gave no result: ImportError: libnccl.so.2")


def test_requests_that_cannot_run_in_an_image_are_refused(image_site, capsys):
    site = image_site.use("apptainer")
    with pytest.raises(InputError, match="only the all-reduce runs in an image"):
        check_node(HealthOptions(node="n0", container=ContainerOptions(image="x")), site=site)
    with pytest.raises(InputError, match="ContainerOptions.mounts without ContainerOptions.image"):
        opts = HealthOptions(node="n0", allreduce=True, container=ContainerOptions(mounts="/a"))
        check_node(opts, site=site)
    with pytest.raises(InputError, match="come from the site"):
        check_node(_options(image_site.image), site=None)
    with pytest.raises(InputError, match="does not exist"):
        check_node(_options(image_site.image + ".gone"), site=site)
    # the command line: one line, exit 2
    argv = ["health", "--site", site, "--node", "n0", "--container-image", image_site.image]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "snrun health: error: --container-image: is a setting of the all-reduce check, and "
        "--allreduce was not given (hint: add --allreduce, or drop --container-image)"
    ]
    assert main([*argv, "--allreduce", "--allreduce-backend", "gloo", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in data["checks"]] == ["devices", "allreduce"]
