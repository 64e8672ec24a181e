"""A container that cannot start is cause ``container`` whatever the way it fails (no python,
no torch, a missing library, a bad entry point, the runtime itself), with the runtime's own
line in `snrun status` and in `snrun logs`, and no restart.

The enter script and torchrun's entry (fast_exit.py) run for real here, with an interpreter
that is missing or a `torch` that fails to import in each of those ways; the started mark is
made only once torchrun is imported. The runtimes' own failures are recorded lines (pyxis,
runc through Slurm OCI, Apptainer) fed through the agent's reading and the supervisor."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_supernode.api.logs import LogSelection, open_logs
from slurm_supernode.cli.main import main
from slurm_supernode.launch.container_render import enter_script
from slurm_supernode.runtime.agent_plan import FAST_EXIT
from slurm_supernode.runtime.classify import ExitCode
from slurm_supernode.runtime.container_launch import runtime_error, runtime_output
from tests.runtime.test_supervisor_loop import Harness

# What a `torch` of the image does on import, in each way an image fails to start
BROKEN_TORCH = {
    "no torch": "raise ModuleNotFoundError(\"No module named 'torch'\", name='torch')",
    "missing library": "raise ImportError('libtorch_cpu.so: cannot open shared object file: "
    "No such file or directory')",
    "bad entry point": "",  # a torch without torch.distributed.run: the entry is not there
}
WANT = {
    "no torch": "ModuleNotFoundError: No module named 'torch'",
    "missing library": "ImportError: libtorch_cpu.so: cannot open shared object file",
    "bad entry point": "ModuleNotFoundError: No module named 'torch.distributed'",
}


def start(tmp_path: Path, python: str, torch_init: str | None) -> tuple[int, str, bool]:
    """Run the enter script with ``python`` running torchrun's entry; (exit, stderr, mark)."""
    started = tmp_path / "n0.0.started"
    enter = tmp_path / "n0.0.enter.sh"
    enter.write_text(enter_script({"SNRUN_NODE": "n0"}, str(tmp_path), str(started)))
    env = {"PATH": "/usr/bin:/bin"}
    if torch_init is not None:
        fake = tmp_path / "image-site" / "torch"
        fake.mkdir(parents=True)
        (fake / "__init__.py").write_text(torch_init + "\n")
        if torch_init.startswith("#ok"):
            (fake / "distributed").mkdir()
            (fake / "distributed" / "__init__.py").write_text("")
            (fake / "distributed" / "run.py").write_text("def main():\n    return 0\n")
        env["PYTHONPATH"] = str(fake.parent)
    argv = ["/bin/sh", str(enter), python, FAST_EXIT, "-m", "torch.distributed.run", "--x"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    return proc.returncode, proc.stderr, started.exists()


def test_no_python_in_the_image(tmp_path):
    code, stderr, marked = start(tmp_path, "python3-not-in-this-image", None)
    assert code == 127 and not marked
    line = runtime_error(stderr, code)
    assert "python3-not-in-this-image" in line and "not found" in line


@pytest.mark.parametrize("way", sorted(BROKEN_TORCH))
def test_a_torch_that_cannot_start(tmp_path, way):
    code, stderr, marked = start(tmp_path, sys.executable, BROKEN_TORCH[way])
    assert code == 1 and not marked, stderr
    assert runtime_error(stderr, code).startswith(WANT[way])
    assert runtime_output(stderr)[-1].startswith(WANT[way])


def test_torchrun_that_starts_marks_it(tmp_path):
    code, stderr, marked = start(tmp_path, sys.executable, "#ok")
    assert (code, marked) == (0, True), stderr


# Lines the runtimes print when they cannot start a container (srun's own lines after them)
RECORDED = {
    "pyxis": (
        "pyxis: importing docker image: /shared/images/missing.sqsh\n"
        "pyxis: failed to import docker image\n"
        "pyxis: printing enroot log file:\n"
        "pyxis:     [ERROR] No such file or directory: /shared/images/missing.sqsh\n"
        "slurmstepd: error: pyxis: container start failed with error code: 1\n"
        "srun: error: n0: task 0: Exited with exit code 1\n",
        "slurmstepd: error: pyxis: container start failed with error code: 1",
    ),
    "oci": (
        'runc run failed: unable to start container process: exec: "/bin/sh": stat /bin/sh: '
        "no such file or directory\n"
        "srun: error: n0: task 0: Exited with exit code 1\n",
        'runc run failed: unable to start container process: exec: "/bin/sh": stat /bin/sh: '
        "no such file or directory",
    ),
    "apptainer": (
        "FATAL:   could not open image /shared/images/x.sif: failed to retrieve path for "
        "/shared/images/x.sif: lstat /shared/images/x.sif: no such file or directory\n",
        "FATAL:   could not open image /shared/images/x.sif: failed to retrieve path for "
        "/shared/images/x.sif: lstat /shared/images/x.sif: no such file or directory",
    ),
}


@pytest.mark.parametrize("runtime", sorted(RECORDED))
def test_the_runtimes_own_line(runtime):
    tail, line = RECORDED[runtime]
    assert runtime_error(tail, 1) == line


def test_container_that_starts_nowhere_stops_at_once_and_says_why(tmp_path, monkeypatch, capsys):
    """Every node: cause container, no restart, the runtime's line in status and logs."""
    said = [
        "/jobs/j/container/n0.0.enter.sh: 3: exec: python3: not found",
    ]
    h = Harness(tmp_path, monkeypatch)
    failed = {"container_failed": {"n0": said, "n1": said}, "rc": 127}
    assert h.run({"attempts": [failed, failed]}) is ExitCode.FAILED
    assert h.ends() == [("container", "stop")]
    final = h.final()
    assert final["state"] == "FAILED" and said[0] in final["reason"]
    (h.job_dir / "plan.json").write_text("{}")
    assert main(["status", str(h.job_dir), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["attempts"][0]["cause"] == "container"
    assert said[0] in status["attempts"][0]["detail"]
    lines = list(open_logs(h.job_dir, LogSelection()) or [])
    assert lines == [f"[n0 container] {said[0]}", f"[n1 container] {said[0]}"]
    assert list(open_logs(h.job_dir, LogSelection(attempt=0, node="n1")) or []) == [
        f"[n1 container] {said[0]}"
    ]
    assert main(["logs", str(h.job_dir)]) == 0
    assert f"[n0 container] {said[0]}" in capsys.readouterr().out


def test_a_node_stopped_before_its_container_started_says_so_in_logs(tmp_path, monkeypatch):
    """n0's container failed; n1 was stopped (fail fast) before its own started."""
    from slurm_supernode.chain import ledger

    said = ["/jobs/j/container/n0.0.enter.sh: 3: exec: python3: not found"]
    h = Harness(tmp_path, monkeypatch)
    assert h.run({"attempts": [{"container_failed": {"n0": said}, "rc": 127}]}) is not None
    ledger.append(
        h.job_dir, "node_exit", attempt=0, node="n1", exit_code=143,
        stopped="n0 failed first", container_unstarted=True,
    )  # fmt: skip
    lines = list(open_logs(h.job_dir, LogSelection()) or [])
    assert lines == [
        f"[n0 container] {said[0]}",
        "[n1 container] stopped before its container started (n0 failed first)",
    ]
