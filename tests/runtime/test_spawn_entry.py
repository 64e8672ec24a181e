"""Spawned workers (--no-fork-workers, -m modules, Ascend) get the optimizer-step hook too:
torchrun runs ``spawn_entry.py SCRIPT|-m MODULE ARGS``, which runs them as Python would and
installs the hook once the script's own ``import torch`` finished. Real interpreters, real
torch (CPU): the step records are what the forked workers' hook writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from slurm_supernode.placement.rankmap import build_rank_map
from slurm_supernode.runtime.agent_plan import SPAWN_ENTRY, plan_agent_launch
from slurm_supernode.runtime.spawn_entry import AfterImport
from tests.placement.sites import make_site
from tests.runtime.inputs import make_inputs

ROOT = Path(__file__).resolve().parents[2]
TRAIN = """
import os, sys
import torch
from slurm_supernode import progress
print(json.dumps({"argv0": sys.argv[0], "args": sys.argv[1:], "path0": sys.path[0],
                  "runtime_on_path": any(p.endswith("runtime") for p in sys.path)}))
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(5):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    progress.report(tokens=100, loss=float(loss))  # adds figures to the hooked step
"""


def _run(args: list[str], tmp_path: Path, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    environ = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        SNRUN_JOB_DIR=str(tmp_path / "job"),
        SNRUN_NODE="n1",
        SNRUN_ATTEMPT="0",
        RANK="3",
        LOCAL_RANK="1",
        **env,
    )
    return subprocess.run(
        [sys.executable, "-u", SPAWN_ENTRY, *args],
        env=environ,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _steps(tmp_path: Path) -> list[dict]:
    path = tmp_path / "job" / "observe" / "0" / "rank-3.steps.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_spawned_script_is_hooked_and_runs_as_python_would(tmp_path):
    script = tmp_path / "code" / "train.py"
    script.parent.mkdir()
    script.write_text("import json\n" + TRAIN)
    out = _run([str(script), "--lr", "a b"], tmp_path, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.splitlines()[0])
    assert seen["argv0"] == str(script) and seen["args"] == ["--lr", "a b"]
    assert seen["path0"] == str(script.parent) and not seen["runtime_on_path"]
    steps = _steps(tmp_path)
    # one record per optimizer step (the hook's), not one more per progress.report
    assert [s["step"] for s in steps] == [1, 2, 3, 4, 5]
    # a report goes with the step the hook records next (as in forked workers)
    assert steps[0]["tokens"] is None and all(s["node"] == "n1" for s in steps)
    assert all(s["tokens"] == 100 and s["loss"] is not None for s in steps[1:])
    assert all(s["busy_s"] is not None for s in steps)


def test_a_spawned_module_is_hooked_and_finds_its_package_from_the_working_directory(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text("import json\n" + TRAIN)
    out = _run(["-m", "pkg.train", "x"], tmp_path, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.splitlines()[0])
    assert seen["argv0"] == str(pkg / "train.py") and seen["args"] == ["x"]
    assert seen["path0"] == str(tmp_path) and not seen["runtime_on_path"]
    assert [s["step"] for s in _steps(tmp_path)] == [1, 2, 3, 4, 5]


def test_failures_and_exit_codes_pass_through_and_no_torch_is_imported_for_the_script(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text("import sys\nprint('torch' in sys.modules)\nsys.exit(3)\n")
    out = _run([str(script)], tmp_path, cwd=tmp_path)
    assert out.returncode == 3 and out.stdout.strip() == "False"  # nothing imported for it
    script.write_text("raise RuntimeError('boom')\n")
    out = _run([str(script)], tmp_path, cwd=tmp_path)
    assert out.returncode == 1 and out.stderr.count("RuntimeError: boom") == 1
    assert not (tmp_path / "job" / "observe").exists()  # no optimizer: no step records
    out = _run([], tmp_path, cwd=tmp_path)
    assert out.returncode == 2 and "usage: spawn_entry.py" in out.stderr


def test_after_import_runs_once_the_package_ran_and_leaves_its_loader(tmp_path, monkeypatch):
    pkg = tmp_path / "watched_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("first = 1\nfrom . import sub\nlast = 2\n")
    (pkg / "sub.py").write_text("x = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []
    finder = AfterImport("watched_pkg", lambda m: seen.append((m.__name__, m.last)))
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    import watched_pkg  # the import under test

    assert seen == [("watched_pkg", 2)]  # after the whole __init__ ran, once
    assert finder not in sys.meta_path
    assert type(watched_pkg.__loader__).__name__ == "SourceFileLoader"
    assert watched_pkg.__spec__.loader is watched_pkg.__loader__
    sys.modules.pop("watched_pkg.sub", None)
    sys.modules.pop("watched_pkg", None)


def test_the_agent_runs_spawned_workers_through_the_entry():
    site = make_site(1, 2, 8, 2)
    rm = build_rank_map(site, [n.hostname for n in site.nodes])
    host = site.nodes[0].hostname
    script = plan_agent_launch(make_inputs(), site, rm, host, {}, attempt=0, job_id=1)
    assert script.argv[-4:] == [SPAWN_ENTRY, "train.py", "--x", "a b"]
    module = make_inputs(program_argv=("-m", "pkg.train", "--x"))
    launch = plan_agent_launch(module, site, rm, host, {}, attempt=0, job_id=1)
    assert launch.argv[-4:] == [SPAWN_ENTRY, "-m", "pkg.train", "--x"]
    assert launch.argv.index(SPAWN_ENTRY) > launch.argv.index("torch.distributed.run")
