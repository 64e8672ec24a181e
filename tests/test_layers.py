"""Layer rules that import-linter cannot see. The import contracts themselves are in
``.importlinter`` (``make lint`` runs ``lint-imports``); this test runs them too when the tool
is installed."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "slurm_supernode"
SLURM_COMMANDS = {
    "sbatch", "srun", "salloc", "scontrol", "squeue", "sinfo", "sacct", "sacctmgr", "scancel",
    "scrontab", "sstat", "sprio", "sshare", "sreport", "sdiag", "strigger",
}  # fmt: skip
SPAWNERS = {"run", "Popen", "call", "check_call", "check_output", "execvp", "execv", "spawnvp"}


def _spawned_slurm_commands(path: Path, base: Path = ROOT) -> list[str]:
    """Slurm binaries named in the argument list of a process-spawning call."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
        if name not in SPAWNERS:
            continue
        for sub in ast.walk(node.args[0]):
            if isinstance(sub, ast.Constant) and sub.value in SLURM_COMMANDS:
                found.append(f"{path.relative_to(base)}:{node.lineno}: {sub.value}")
    return found


def test_only_the_slurm_layer_runs_slurm_commands():
    offenders = [
        hit
        for path in PKG.rglob("*.py")
        if path.relative_to(PKG).parts[0] != "slurm"
        for hit in _spawned_slurm_commands(path)
    ]
    assert offenders == []


def _spawned(path: Path, commands: set[str], base: Path = ROOT) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
        if name not in SPAWNERS:
            continue
        for sub in ast.walk(node.args[0]):
            if isinstance(sub, ast.Constant) and sub.value in commands:
                found.append(f"{path.relative_to(base)}:{node.lineno}: {sub.value}")
    return found


def test_only_the_transport_runs_ssh():
    """remote/ssh.py is the one module that spawns ssh (its argv comes from remote/command.py)."""
    spawners = {
        str(path.relative_to(PKG))
        for path in PKG.rglob("*.py")
        if _spawned(path, {"ssh", "scp", "rsync", "sftp"})
        or (path.name != "command.py" and '"ssh",' in path.read_text())
    }
    assert spawners <= {"remote/ssh.py"}, spawners


def test_the_check_finds_a_slurm_call(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import subprocess\nsubprocess.run(['scontrol', 'show', 'job'])\n")
    assert _spawned_slurm_commands(bad, tmp_path) == ["bad.py:2: scontrol"]


@pytest.mark.skipif(shutil.which("lint-imports") is None, reason="import-linter not installed")
def test_import_contracts_hold():
    proc = subprocess.run(
        ["lint-imports", "--config", str(ROOT / ".importlinter")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={
            "PYTHONPATH": str(ROOT),
            "PATH": "/usr/bin:/bin:" + str(Path(shutil.which("lint-imports")).parent),
        },
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
