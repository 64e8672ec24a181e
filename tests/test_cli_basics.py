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
    that only other paths need: ClusterShell's NodeSet (~25 ms), filelock."""
    code = (
        "import sys; from slurm_supernode.cli.main import main;"
        f"rc = main(['--site', 'local', '-S', '2', '--jobs-dir', {str(tmp_path)!r},"
        " '--dry-run', 'train.py']);"
        "heavy = sorted({'torch', 'ClusterShell.NodeSet', 'filelock'} & set(sys.modules));"
        "assert rc == 0 and not heavy, (rc, heavy)"
    )
    env = dict(os.environ, SLURM_CONF="/nonexistent/slurm.conf")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    (tmp_path / "train.py").write_text("")
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
