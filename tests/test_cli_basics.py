from __future__ import annotations

import subprocess
import sys

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
