"""Submission hygiene: missing script/module/-D refused, #SBATCH lines, code snapshot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_supernode.errors import InputError
from slurm_supernode.launch.directives import (
    apply_directives,
    blame_line,
    directive_notices,
    parse_directives,
)
from slurm_supernode.launch.snapshot import (
    check_program,
    collect_snapshot,
    find_module,
    plan_snapshot,
    write_snapshot,
)

ROOT = Path(__file__).resolve().parents[2]


def snrun(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), SLURM_CONF="/nonexistent/slurm.conf")
    return subprocess.run(
        [sys.executable, "-m", "slurm_supernode", "--site", "local", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
    )


def test_leading_sbatch_lines_only_like_sbatch() -> None:
    text = (
        "#!/usr/bin/env python\n\n#SBATCH --time=10 -J a   # note\n#SBATCH --reservation r1 --hold"
        "\n# plain comment\n#SBATCH -N 4\nimport os\n#SBATCH --time=99\n"
    )
    ds = parse_directives(text, "t.py")
    assert [(d.line, d.option, d.value, d.field) for d in ds] == [
        (3, "--time", "10", "time"),
        (3, "-J", "a", "job_name"),
        (4, "--reservation", "r1", None),
        (4, "--hold", None, None),
        (6, "-N", "4", "nodes"),
    ]  # the directive after the first statement is ignored, as sbatch does
    got = apply_directives({"time": "5", "job_name": None, "nodes": None}, ds)
    assert got == {"job_name": "a", "nodes": 4, "sbatch_args": ("--reservation=r1", "--hold")}
    with pytest.raises(InputError, match=r"t.py:1: #SBATCH -t needs a value"):
        parse_directives("#SBATCH -t\n", "t.py")
    with pytest.raises(InputError, match=r"t.py:2: .*'oops' is not an option"):
        parse_directives("#!/bin/sh\n#SBATCH oops\n", "t.py")
    with pytest.raises(InputError, match=r"t.py:1: #SBATCH -N '2-4'"):
        apply_directives({}, parse_directives("#SBATCH -N 2-4\n", "t.py"), "t.py")


def test_missing_script_module_or_workdir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("raise SystemExit('imported!')\n")
    (tmp_path / "pkg" / "sub" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "train.py").write_text("")
    (tmp_path / "t.py").write_text("")
    check_program("t.py", False, str(tmp_path))
    check_program("pkg.sub.train", True, str(tmp_path))  # found without importing pkg
    assert find_module("json.decoder", sys.path)
    assert not find_module("pkg.sub.nope", [str(tmp_path)])
    assert not find_module("bad-name", [str(tmp_path)])
    with pytest.raises(InputError, match=r"SCRIPT: script 'x.py' does not exist in"):
        check_program("x.py", False, str(tmp_path))
    with pytest.raises(InputError, match=r"script 'pkg' is a directory"):
        check_program("pkg", False, str(tmp_path))
    with pytest.raises(InputError, match=r"-m: module 'pkg.nope' cannot be found"):
        check_program("pkg.nope", True, str(tmp_path))
    with pytest.raises(InputError, match=r"-D/--chdir: working directory '/nonexistent/x'"):
        check_program("t.py", False, "/nonexistent/x")


def test_cli_refuses_with_one_line_and_exit_2(tmp_path: Path) -> None:
    """Refused before Slurm is asked anything (SLURM_CONF points nowhere here); a dry run
    only warns, so a plan can be made for a script still being written."""
    for args, needle in [
        (["nope.py"], "script 'nope.py' does not exist"),
        (["-m", "nopkg.train"], "module 'nopkg.train' cannot be found"),
        (["-D", str(tmp_path / "gone"), "t.py"], "-D/--chdir"),
    ]:
        out = snrun(*args, cwd=tmp_path)
        errors = [x for x in out.stderr.splitlines() if x.startswith("snrun: error")]
        assert out.returncode == 2 and len(errors) == 1 and needle in errors[0], out.stderr
        assert "Traceback" not in out.stderr
        dry = snrun("--dry-run", *args, cwd=tmp_path)
        assert dry.returncode == 0 and "(a submission would be refused)" in dry.stderr
        assert needle in dry.stderr


def test_dry_run_shows_sbatch_lines_and_the_command_line_wins(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text("#SBATCH --time=7\n#SBATCH --reservation=r1 -J fromfile\n")
    out = snrun("--dry-run", "t.py", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "# --time=7 --reservation=r1 -Jfromfile" in out.stdout
    assert "--job-name=fromfile" in out.stdout and " --time=7 " in out.stdout
    assert "--reservation=r1" in out.stdout
    js = snrun("--dry-run", "--json", "-t", "3", "--sbatch=--reservation=r2", "t.py", cwd=tmp_path)
    preview = json.loads(js.stdout)
    cmd = preview["sbatch_command"]
    assert "--time=3" in cmd and "--time=7" not in cmd
    assert cmd.index("--reservation=r1") < cmd.index("--reservation=r2")  # sbatch: last wins
    assert preview["sbatch_directives"] == ["--time=7", "--reservation=r1", "-Jfromfile"]


def test_snapshot_of_a_plain_directory(tmp_path: Path) -> None:
    src = tmp_path / "proj"
    (src / "lib").mkdir(parents=True)
    (src / "train.py").write_text("print('v1')\n")
    (src / "lib" / "util.py").write_text("X = 1\n")
    (src / "__pycache__").mkdir()
    (src / "__pycache__" / "junk.pyc").write_text("x")
    jobs = src / "jobs"  # a jobs dir inside the code folder is not copied into itself
    (jobs / "old").mkdir(parents=True)
    (jobs / "old" / "big.log").write_text("x" * 1000)
    job_dir = jobs / "j1"
    plan = plan_snapshot("train.py", False, str(src), job_dir)
    assert plan is not None and plan.program("train.py", str(src)) == str(
        job_dir / "code" / "train.py"
    )
    files, record, diff = collect_snapshot(plan, limit=10_000, skip=[jobs])
    assert sorted(files) == ["lib/util.py", "train.py"] and record["kind"] == "copy"
    write_snapshot(plan, files, record, diff)
    (src / "train.py").write_text("print('v2')\n")  # edited after submission
    assert (job_dir / "code" / "train.py").read_text() == "print('v1')\n"
    rec = json.loads((job_dir / "snapshot.json").read_text())
    assert rec["kind"] == "copy" and rec["files"] == 2 and rec["source"] == str(src)
    with pytest.raises(InputError, match=r"over the limit.*--no-snapshot"):
        collect_snapshot(plan, limit=5, skip=[jobs])
    assert plan_snapshot("train.py", False, str(src), job_dir, enabled=False) is None


def test_snapshot_leaves_out_job_dirs_of_a_jobs_dir_that_is_the_code_folder(tmp_path: Path):
    """``--jobs-dir .`` beside the script: earlier jobs (and their snapshots) are not code."""
    (tmp_path / "train.py").write_text("print(1)\n")
    for n in (1, 2):
        old = tmp_path / f"train.py-old{n}"
        (old / "code").mkdir(parents=True)
        (old / "plan.json").write_text("{}")
        (old / "code" / "train.py").write_text("print(1)\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.txt").write_text("x")
    plan = plan_snapshot("train.py", False, str(tmp_path), tmp_path / "train.py-new")
    assert plan is not None
    files, _, _ = collect_snapshot(plan, limit=10_000, skip=[tmp_path])
    assert sorted(files) == ["data/x.txt", "train.py"]


def test_snapshot_in_git_records_commit_and_diff(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / ".gitignore").write_text("*.ckpt\n")
    (repo / "scripts" / "train.py").write_text("v = 1\n")
    (repo / "scripts" / "model.ckpt").write_text("ignored")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "c1"], check=True)
    (repo / "scripts" / "train.py").write_text("v = 2\n")  # uncommitted change
    (repo / "scripts" / "new.py").write_text("n = 1\n")  # untracked, not ignored
    plan = plan_snapshot("scripts/train.py", False, str(repo), tmp_path / "job")
    assert plan is not None
    files, record, diff = collect_snapshot(plan, limit=10_000)
    assert sorted(files) == ["new.py", "train.py"]
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert record["kind"] == "git" and record["commit"] == head.strip() and record["dirty"]
    assert record["untracked"] == ["new.py"]
    write_snapshot(plan, files, record, diff)
    assert "+v = 2" in (tmp_path / "job" / "code.diff").read_text()
    assert (tmp_path / "job" / "code" / "train.py").read_text() == "v = 2\n"  # what was submitted


def test_module_runs_from_the_snapshot(tmp_path: Path) -> None:
    """With a snapshot, `-m pkg.mod` is found in the copy even from the live working dir."""
    from slurm_supernode.placement.model import Layout
    from slurm_supernode.placement.rankmap import build_rank_map
    from slurm_supernode.runtime.agent_plan import plan_agent_launch
    from tests.placement.sites import make_site
    from tests.runtime.inputs import make_inputs

    site = make_site(1, 2, 8, 2)
    hosts = [n.hostname for n in site.nodes]
    rm = build_rank_map(site, hosts, Layout(), 1)
    inputs = make_inputs(
        program_argv=("-m", "pkg.train"),
        python=sys.executable,
        snapshot={"dir": "/jobs/j/code", "module": True},
    )
    launch = plan_agent_launch(
        inputs, site, rm, hosts[0], {"PYTHONPATH": "/x"}, attempt=0, job_id=1
    )
    assert launch.env["PYTHONPATH"] == "/jobs/j/code:/x" and launch.env["PYTHONSAFEPATH"] == "1"
    if sys.version_info < (3, 11):
        return
    live, code = tmp_path / "live", tmp_path / "code"
    for d, v in ((live, "live"), (code, "snap")):
        (d / "pkg").mkdir(parents=True)
        (d / "pkg" / "__init__.py").write_text("")
        (d / "pkg" / "train.py").write_text(f"print({v!r})\n")
    env = dict(os.environ, PYTHONPATH=str(code), PYTHONSAFEPATH="1")
    out = subprocess.run(
        [sys.executable, "-m", "pkg.train"], cwd=live, env=env, capture_output=True, text=True
    )
    assert out.stdout.strip() == "snap"


@pytest.mark.parametrize(
    "line",
    ["--ntasks-per-node=4", "-n 8", "--ntasks 8", "--gres=gpu:2", "--no-requeue",
     "--signal=USR1@60", "--open-mode truncate", "-W", "--array=1-3", "--parsable"],
)  # fmt: skip
def test_sbatch_line_that_conflicts_with_snrun_is_refused_naming_it(line: str) -> None:
    ds = parse_directives(f"#!/usr/bin/env python\n#SBATCH -t 5\n#SBATCH {line}\n", "t.py")
    with pytest.raises(InputError) as exc:
        apply_directives({}, ds, "t.py")
    text = str(exc.value)
    assert text.startswith("t.py:3: #SBATCH ") and "conflicts with what snrun sets" in text
    assert line.split()[0].split("=")[0] in text


def test_sbatch_options_that_mean_otherwise_in_snrun_are_named(tmp_path: Path) -> None:
    ds = parse_directives("#SBATCH -S 2\n#SBATCH --core-spec=2 -m block\n#SBATCH -N 4\n", "t.py")
    assert apply_directives({}, ds, "t.py") == {
        "sbatch_args": ("-S2", "--core-spec=2", "-mblock"),  # passed to sbatch as is
        "nodes": 4,
    }
    notices = directive_notices(ds, "t.py")
    assert len(notices) == 2
    assert notices[0].startswith("t.py:1: #SBATCH -S 2 is sbatch's core specialisation")
    assert "not snrun -S N: whole super nodes" in notices[0]
    assert notices[1].startswith("t.py:2: #SBATCH -m block is sbatch's task distribution")
    (tmp_path / "t.py").write_text("#SBATCH -S 2\n")
    out = snrun("--dry-run", "t.py", cwd=tmp_path)
    assert out.returncode == 0 and "snrun: t.py:1: #SBATCH -S 2 is sbatch's core" in out.stderr


def test_sbatch_error_about_a_script_line_names_the_line() -> None:
    ds = parse_directives(
        "#SBATCH -t 5 --reservation=r1\n#SBATCH --bogus\n#SBATCH --distribution=weird\n", "t.py"
    )
    assert blame_line("sbatch: unrecognized option '--bogus'", ds, "t.py") == "t.py:2"
    assert blame_line("sbatch: error: Invalid --distribution specification", ds, "t.py") == "t.py:3"
    assert blame_line("sbatch: error: Invalid account or account/partition", ds, "t.py") is None
