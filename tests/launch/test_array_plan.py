"""Sweep plans: one job array whose tasks are whole-super-node job chains. The array script is
run by bash here (with a recording stand-in for python) to show each task finds its own
directory; the written sweep is read back as the supervisor reads it."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest

from slurm_supernode.errors import InputError
from slurm_supernode.launch.array_plan import plan_sweep, substitute
from slurm_supernode.launch.array_submit import write_sweep
from slurm_supernode.launch.inputs import JobInputs
from slurm_supernode.launch.jobspec import JobSpec
from slurm_supernode.launch.param_grid import build_grid
from slurm_supernode.launch.request import ClusterFacts
from slurm_supernode.site.loader import load_site

SITE = load_site("local")
FEATURES = ClusterFacts(
    topology_plugin="topology/tree",
    node_features={n.hostname: frozenset([sn.feature]) for sn in SITE.supernodes for n in sn.nodes},
)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text("print('hi')\n")
    recorder = tmp_path / "python"  # stands in for the interpreter the script starts
    recorder.write_text(
        '#!/bin/bash\necho "$SNRUN_JOB_DIR|$SNRUN_SITE_FILE|$*" >> "$(dirname "$0")/calls"\n'
    )
    recorder.chmod(0o755)
    return tmp_path


def spec_in(work: Path, **kw) -> JobSpec:
    base = JobSpec(
        program="train.py",
        program_args=("--lr", "{lr}", "--out", "run-{task}-{seed}", '{"keep": 1}'),
        supernodes=1,
        workdir=str(work),
        launcher_python=str(work / "python"),
    )
    return dataclasses.replace(base, **kw)


def test_one_array_of_whole_supernode_tasks_with_their_own_arguments(work):
    grid = build_grid(["lr=1e-4,3e-4", "seed=0-1"])
    plan = plan_sweep(spec_in(work), grid, SITE, FEATURES, jobs_root=work / "jobs", throttle=2)
    assert plan.array == "0-3%2" and plan.array_args[-1] == "--array=0-3%2"
    tasks_dir = plan.sweep_dir / "tasks"
    assert f"--output={tasks_dir}/%a/logs/slurm-%j.out" in plan.array_args
    assert "--nodes=4" in plan.array_args and "--constraint=[sn0|sn1]" in plan.array_args
    argv = [t.plan.inputs.program_argv for t in plan.tasks]
    assert argv[1][1:] == ("--lr", "1e-4", "--out", "run-1-1", '{"keep": 1}')
    assert argv[2][1:5] == ("--lr", "3e-4", "--out", "run-2-0")
    for t in plan.tasks:
        assert t.plan.job_dir == tasks_dir / str(t.index)
        assert t.plan.inputs.sweep == {"dir": str(plan.sweep_dir), "task": t.index,
                                       "params": t.params}  # fmt: skip
        # the task's own request: what a resubmission of this task sends (no --array)
        args = t.plan.inputs.request["sbatch_args"]
        assert f"--output={tasks_dir}/{t.index}/logs/slurm-%j.out" in args
        assert not any(a.startswith("--array") for a in args)
        assert t.plan.script == plan.script


def test_the_array_script_runs_each_task_in_its_own_directory(work):
    plan = plan_sweep(
        spec_in(work), build_grid(["lr=1,2,3"]), SITE, FEATURES, jobs_root=work / "jobs"
    )
    script = work / "job.sh"
    script.write_text(plan.script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    for task in ("2", "0"):
        out = subprocess.run(["bash", str(script)], env=env | {"SLURM_ARRAY_TASK_ID": task},
                             capture_output=True, text=True)  # fmt: skip
        assert out.returncode == 0, out.stderr
    calls = (work / "calls").read_text().splitlines()
    task2 = plan.sweep_dir / "tasks" / "2"
    assert (
        calls[0] == f"{task2}|{task2}/site.yaml|-m slurm_supernode supervise --job-dir {task2} --"
    )
    assert calls[1].startswith(f"{plan.sweep_dir / 'tasks' / '0'}|")
    out = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "not a job array task" in out.stderr


def test_written_sweep_shares_one_snapshot_and_reads_back(work):
    plan = plan_sweep(
        spec_in(work), build_grid(["lr=1,2"]), SITE, FEATURES, jobs_root=work / "jobs"
    )
    write_sweep(plan)
    assert (plan.sweep_dir / "code" / "train.py").is_file()
    data = json.loads((plan.sweep_dir / "sweep.json").read_text())
    assert [t["params"] for t in data["tasks"]] == [{"lr": "1"}, {"lr": "2"}]
    for t in plan.tasks:
        d = t.plan.job_dir
        assert (d / "code").is_symlink() and (d / "code" / "train.py").is_file()
        inputs = JobInputs.read(d)
        assert inputs.sweep == {"dir": str(plan.sweep_dir), "task": t.index, "params": t.params}
        assert Path(inputs.program_argv[0]).is_file()
        assert (d / "job.sh").read_text() == plan.script


def test_multi_supernode_tasks_that_need_a_het_job_are_refused(work):
    with pytest.raises(InputError, match="heterogeneous job: Slurm cannot put those in a job"):
        plan_sweep(spec_in(work, supernodes=2), build_grid(["lr=1,2"]), SITE, FEATURES,
                   jobs_root=work / "jobs")  # fmt: skip
    block = ClusterFacts(topology_plugin="topology/block", supports_segment=True)
    plan = plan_sweep(spec_in(work, supernodes=2), build_grid(["lr=1,2"]), SITE, block,
                      jobs_root=work / "jobs")  # fmt: skip
    assert "--segment=4" in plan.array_args and "--nodes=8" in plan.array_args


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"env": (("LR", "{lr}"),)}, "--env"),
        ({"sbatch_args": ("--array=0-9",)}, "--sbatch=--array"),
    ],
)
def test_options_a_sweep_cannot_honour_are_refused(work, change, where):
    with pytest.raises(InputError) as err:
        plan_sweep(spec_in(work, **change), build_grid(["lr=1,2"]), SITE, FEATURES,
                   jobs_root=work / "jobs")  # fmt: skip
    assert err.value.where == where and err.value.hint


def test_substitute_replaces_only_grid_names_and_task():
    assert substitute("{lr}/{task}/{other}/{}", {"lr": "1e-4"}, 3) == "1e-4/3/{other}/{}"


def test_the_dry_run_shows_the_output_path_as_sbatch_gets_it(work):
    """The array script's header and the sbatch command agree: `tasks/%a`, never task 0's
    own directory (issue #38)."""
    grid = build_grid(["seed=0-2"])
    plan = plan_sweep(spec_in(work), grid, SITE, FEATURES, jobs_root=work / "jobs")
    tasks_dir = plan.sweep_dir / "tasks"
    header = [line for line in plan.script.splitlines() if line.startswith("#   --")]
    assert f"#   --output={tasks_dir}/%a/logs/slurm-%j.out" in header
    assert "#   --array=0-2" in header
    assert not any(f"{tasks_dir}/0/" in line for line in header), header
    assert [line[4:] for line in header] == list(plan.array_args)


def test_the_last_line_of_a_waited_sweep_is_words(work, monkeypatch, capsys):
    """`snrun --sweep ... -W`: the end in words (`2 COMPLETED, 1 FAILED`), not a dict."""
    import argparse

    from slurm_supernode.api import sweep as api_sweep
    from slurm_supernode.cli.sweep_run import run_sweep

    class Done:
        array_job_id = 77

        def wait(self):
            return {"state": "FAILED", "counts": {"COMPLETED": 2, "FAILED": 1}}

    planned = plan_sweep(spec_in(work), build_grid(["seed=0-2"]), SITE, FEATURES,
                         jobs_root=work / "jobs")  # fmt: skip
    monkeypatch.setattr(api_sweep, "plan", lambda *a, **k: planned)
    monkeypatch.setattr(api_sweep, "submit_sweep", lambda *a, **k: Done())
    ns = argparse.Namespace(throttle=None, dry_run=False, after=None, parsable=True, wait=True)
    assert run_sweep(ns, spec_in(work), build_grid(["seed=0-2"])) == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == "snrun: sweep FAILED: 2 COMPLETED, 1 FAILED"
