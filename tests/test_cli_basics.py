from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from slurm_supernode import __version__
from slurm_supernode.cli.main import main


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"snrun {__version__}"


def test_help_lists_subcommands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ("plan", "site", "status", "bench", "health"):
        assert f"  {name}" in out


def test_login_path_does_not_import_torch():
    code = (
        "import sys; from slurm_supernode.cli.main import main; main(['--help']);"
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_dry_run_stays_light(tmp_path):
    """A dry run (the login path users wait on) loads neither torch nor the heavier helpers
    that only other paths need: ClusterShell's NodeSet (~25 ms), filelock; without a Slurm
    (no slurm.conf) not the Slurm layer's runner (subprocess), nor the container modules
    without an image or a site section of containers, nor the IP patterns of a site without
    IPs, nor difflib without a misspelt name (docs/benchmarks.md)."""
    heavy = (
        "torch",
        "ClusterShell.NodeSet",
        "filelock",
        "subprocess",
        "slurm_supernode.slurm.runner",
        "slurm_supernode.launch.container",
        "slurm_supernode.launch.container_options",
        "slurm_supernode.site.containers",
        "slurm_supernode.site.ip_patterns",
        "difflib",
        "slurm_supernode.jobenv",  # the job's view of its environment (user_settings instead)
    )
    code = (
        "import sys; from slurm_supernode.cli.main import main;"
        f"rc = main(['--site', 'local', '-S', '2', '--jobs-dir', {str(tmp_path)!r},"
        " '--dry-run', 'train.py']);"
        f"heavy = sorted(set({heavy!r}) & set(sys.modules));"
        "assert rc == 0 and not heavy, (rc, heavy)"
    )
    env = dict(os.environ, SLURM_CONF="/nonexistent/slurm.conf")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    (tmp_path / "train.py").write_text("")
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


DRY_RUN_DATACLASSES = 23  # docs/benchmarks.md: each costs a dry run ~1% of its instructions


def test_dry_run_makes_few_dataclasses(tmp_path):
    """Making a dataclass compiles its methods from source (~3-10 M instructions each, half of
    a dry run's own cost once): the dry run stays within 1.5x of importing jinja2 and yaml
    only while its path defines few. A new one here wants a reason (a small internal value is
    a NamedTuple; docs/benchmarks.md), and this number raised with it."""
    code = (
        "import dataclasses, sys; from slurm_supernode.cli.main import main;"
        f"rc = main(['--site', 'local', '-S', '1', '--jobs-dir', {str(tmp_path)!r},"
        " '--dry-run', 'train.py']);"
        "made = sorted({f'{n}.{k}' for n, m in list(sys.modules.items())"
        " if n.startswith('slurm_supernode') for k, v in vars(m).items()"
        " if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == n});"
        "print(len(made)); print(*made)"
    )
    env = dict(os.environ, SLURM_CONF="/nonexistent/slurm.conf")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    (tmp_path / "train.py").write_text("")
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    count, names = proc.stdout.splitlines()[-2:]
    assert 20 <= int(count) <= DRY_RUN_DATACLASSES, names


def _chain(root: Path, name: str, job_id: int, **final: str) -> Path:
    from slurm_supernode.chain import ledger
    from slurm_supernode.launch.jobdir import link_job_id

    d = root / name
    d.mkdir(parents=True)
    (d / "plan.json").write_text("{}")
    (d / "job.json").write_text(f'{{"job_ids": [{job_id}]}}')
    link_job_id(root, d, job_id)
    ledger.append(d, "attempt_start", attempt=0, job_id=job_id, nodes="n0")
    if final:
        ledger.append(d, "final", job_id=job_id, **final)
    return d


def test_status_without_a_job_lists_recent_chains(tmp_path, capsys):
    import json
    import time

    _chain(tmp_path, "old.py-1", 3, state="FAILED", reason="x")
    time.sleep(0.02)
    _chain(tmp_path, "mid.py-2", 4, state="COMPLETED", reason="y")
    time.sleep(0.02)
    _chain(tmp_path, "new.py-3", 5)
    (tmp_path / "not-a-job").mkdir()
    assert main(["status", "--jobs-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["job", "ids", "state"]
    assert [line.split()[:2] for line in lines[1:]] == [
        ["5", "RUNNING"], ["4", "COMPLETED"], ["3", "FAILED"],
    ]  # fmt: skip
    assert main(["status", "--jobs-dir", str(tmp_path), "-n", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["job_ids"], r["state"], r["attempts"]) for r in rows] == [([5], "RUNNING", 1)]
    assert main(["status", "--jobs-dir", str(tmp_path / "none")]) == 0
    assert "no snrun jobs of yours under" in capsys.readouterr().out


def test_output_into_a_closed_pipe_ends_quietly(tmp_path):
    """`snrun status | head -1`: the reader is gone before snrun writes; exit 0, no error."""
    for i in range(3):
        _chain(tmp_path, f"j{i}", 10 + i)
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write now fails with EPIPE, as after head -1 exits
    root = Path(__file__).resolve().parents[1]
    for argv in (["status", "--jobs-dir", str(tmp_path)], ["site", "show", "local"]):
        proc = subprocess.run(
            [sys.executable, "-m", "slurm_supernode", *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, PYTHONPATH=str(root)),
        )
        assert (proc.returncode, proc.stderr) == (0, ""), argv
    os.close(write_end)
