"""`snrun site export --format health-check`: the HealthCheckProgram wrapper, run here as
slurmd runs it (`env -i` with only PWD and SLURMD_NODENAME) against a fake snrun that records
its calls: absolute paths, the environment, drain then resume-ok, everything quoted."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_supernode.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SITE = str(ROOT / "site-configs" / "local.yaml")

FAKE = """#!/bin/sh
echo "args: $*" >>"{log}"
echo "env: SNRUN_SITE=$SNRUN_SITE SLURMD_NODENAME=$SLURMD_NODENAME SLURM_CONF=$SLURM_CONF" >>"{log}"
command -v scontrol >>"{log}" || echo "no scontrol" >>"{log}"
case "$*" in *--drain*) exit {drain_rc} ;; esac
exit 0
"""


def _export(tmp_path: Path, *extra: str, drain_rc: int = 0) -> tuple[Path, Path]:
    log = tmp_path / "calls.log"
    fake = tmp_path / "bin dir" / "snrun"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(FAKE.format(log=log, drain_rc=drain_rc))
    fake.chmod(0o755)
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    (tools / "scontrol").write_text("#!/bin/sh\nexit 0\n")
    (tools / "scontrol").chmod(0o755)
    out = tmp_path / "snrun-health-check"
    os.environ["PATH"] = f"{tools}:{os.environ['PATH']}"
    try:
        assert main(["site", "export", SITE, "--format", "health-check", "--snrun", str(fake),
                     "-o", str(out), *extra]) == 0  # fmt: skip
    finally:
        os.environ["PATH"] = os.environ["PATH"].split(":", 1)[1]
    return out, log


def _run_as_slurmd(wrapper: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["env", "-i", f"PWD={wrapper.parent}", "SLURMD_NODENAME=n3",
                           "/bin/sh", "-c", str(wrapper)], capture_output=True, text=True,
                          timeout=60)  # fmt: skip


def test_the_wrapper_runs_with_slurmds_environment_drain_then_resume(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", "/etc/slurm x/slurm.conf")
    wrapper, log = _export(tmp_path, "--health-args", "--min-free-gb 20 --path '/a b'")
    assert stat.S_IMODE(wrapper.stat().st_mode) == 0o755
    assert subprocess.run(["sh", "-n", str(wrapper)]).returncode == 0
    assert _run_as_slurmd(wrapper).returncode == 0
    lines = log.read_text().splitlines()
    args = [ln for ln in lines if ln.startswith("args: ")]
    assert args == ["args: health --min-free-gb 20 --path /a b --drain",
                    "args: health --min-free-gb 20 --path /a b --resume-ok"]  # fmt: skip
    assert f"env: SNRUN_SITE={SITE} SLURMD_NODENAME=n3 SLURM_CONF=/etc/slurm x/slurm.conf" in lines
    assert str(tmp_path / "tools" / "scontrol") in lines  # found through the wrapper's PATH


@pytest.mark.parametrize("drain_rc", [2, 3])
def test_a_critical_or_unknown_node_is_not_resumed(tmp_path, drain_rc):
    wrapper, log = _export(tmp_path, drain_rc=drain_rc)
    assert _run_as_slurmd(wrapper).returncode == 0  # slurmd ignores it anyway
    args = [ln for ln in log.read_text().splitlines() if ln.startswith("args: ")]
    assert args == ["args: health --drain"]


def test_the_default_command_is_this_python_by_absolute_path(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    assert main(["site", "export", SITE, "--format", "health-check"]) == 0
    out, err = capsys.readouterr()
    python = os.path.abspath(sys.executable)
    assert f"{python} -m slurm_supernode health --drain" in out
    assert f"PYTHONPATH={ROOT}" in out and "PYTHONPATH=" in err  # carried, and said so
    assert out.startswith("#!/bin/sh\n") and "export PATH SNRUN_SITE" in out


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--health-args=--drain"], "--health-args: --drain is set by the wrapper itself"),
        (["--health-args=--node n1"], "--node is set by the wrapper itself"),
        (["--health-args=--bogus"], "not options of snrun health"),
        (["--health-args", "'unclosed"], "cannot split"),
        (["--python", "python3"], "--python: python3 is not an absolute path"),
        (["--snrun", "/nonexistent/snrun"], "is not an executable file"),
        (["--python", "/bin/sh", "--snrun", "/bin/sh"], "not both"),
    ],
)
def test_bad_options_are_one_line(argv, fragment, capsys):
    assert main(["site", "export", SITE, "--format", "health-check", *argv]) == 2
    err = capsys.readouterr().err
    assert fragment in err and len(err.strip().splitlines()) == 1, err


def test_health_check_options_only_with_that_format(capsys):
    assert main(["site", "export", SITE, "--format", "gres", "--python", "/bin/sh"]) == 2
    assert "--python: only applies to --format health-check" in capsys.readouterr().err
