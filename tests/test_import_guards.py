"""Import guards: the login path and the in-job supervisor/agent work with torch *blocked*.

``sys.modules['torch'] = None`` makes every ``import torch`` (and ``torch.*``) raise, so these
tests fail where torch is installed and where it is not, unlike "'torch' not in sys.modules"
checks, which pass trivially on a machine without torch. The static side of the same rule is
the ``no-torch`` import-linter contract (``.importlinter``, ``make lint``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = "import sys; sys.modules['torch'] = None\n"


def run_blocked(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PYTHONPATH": str(ROOT),
        "PATH": "/usr/bin:/bin",
        "SLURM_CONF": "/nonexistent/slurm.conf",  # no Slurm: every path must still plan
        "HOME": str(tmp_path),
    }
    return subprocess.run(
        [sys.executable, "-c", BLOCK + code],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


def test_the_block_works():
    """The guard itself: with it, importing torch fails (so the tests below can fail)."""
    proc = run_blocked("import torch.distributed", Path("/tmp"))
    assert proc.returncode != 0 and "ModuleNotFoundError" in proc.stderr


def _site(tmp_path: Path) -> str:
    return str(ROOT / "site-configs" / "local.yaml")


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--site", "{site}", "-S", "2", "--jobs-dir", "{tmp}", "--dry-run", "train.py"],
        ["plan", "--site", "{site}", "--nodelist", "n[0-3]", "--tp", "2"],
        ["health", "--site", "{site}", "--node", "n0"],
        ["bench", "submit", "--site", "{site}", "--dry-run", "--jobs-dir", "{tmp}"],
        ["site", "export", "{site}", "--format", "json"],
    ],
    ids=["help", "dry-run", "plan", "health", "bench-submit", "site-export"],
)
def test_login_commands_run_without_torch(argv, tmp_path):
    args = [a.format(site=_site(tmp_path), tmp=tmp_path) for a in argv]
    code = f"from slurm_supernode.cli.main import main; raise SystemExit(main({args!r}))"
    proc = run_blocked(code, tmp_path)
    # health exits 0-3 by what it finds on this machine; no command may die of the guard
    assert "import of torch halted" not in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode in (0, 1, 2, 3), (proc.returncode, proc.stderr[-2000:])


def test_supervisor_and_agent_import_without_torch(tmp_path):
    code = (
        "import slurm_supernode.runtime.supervisor, slurm_supernode.runtime.agent,"
        " slurm_supernode.runtime.release, slurm_supernode.chain.status,"
        " slurm_supernode.cli.supervise, slurm_supernode.cli.agent;"
        " from slurm_supernode.cli.main import main;"
        " raise SystemExit(main(['supervise', '--help']))"
    )
    proc = run_blocked(code, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_torch_import_on_the_login_path_would_be_caught(tmp_path):
    """Proof the guard bites: a module that imports torch fails under it."""
    mod = tmp_path / "uses_torch.py"
    mod.write_text("import torch\n")
    proc = run_blocked(
        f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import uses_torch", tmp_path
    )
    assert proc.returncode != 0 and "import of torch halted" in proc.stderr
