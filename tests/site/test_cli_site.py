"""`snrun site ...` end to end in a subprocess: exit codes, messages, no tracebacks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
BROKEN = ROOT / "tests" / "site" / "broken"


def snrun(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    full_env.pop("SNRUN_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "slurm_supernode", "site", *args],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_validate_good_files():
    r = snrun("validate", "site-configs/local.yaml", "nvl72")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "site-configs/local.yaml: ok (2 super nodes, 8 nodes, 64 devices)"
    assert lines[1].endswith("nvl72.yaml: ok (4 super nodes, 72 nodes, 288 devices)")


def test_validate_reports_every_problem_of_every_file():
    bad1 = "tests/site/broken/unknown_vendor.yaml"
    bad2 = "tests/site/broken/host_in_two.yaml"
    r = snrun("validate", bad1, "site-configs/local.yaml", bad2)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    err = r.stderr.splitlines()
    assert f"{bad1}:3:9: unknown vendor 'amd' (hint: choose one of nvidia, ascend)" in err
    assert any(line.startswith(f"{bad1}:12:13: unknown strategy") for line in err)
    assert any(line.startswith(f"{bad2}:8:12: host n3 is in super nodes") for line in err)
    assert "local.yaml: ok" in r.stdout  # the good file in between is still checked


def test_validate_yaml_syntax_error_has_location():
    r = snrun("validate", "tests/site/broken/yaml_syntax.yaml")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("tests/site/broken/yaml_syntax.yaml:7:14: YAML syntax error")


def test_show_is_plain_when_piped():
    r = snrun("show", "ib-8gpu")
    assert r.returncode == 0, r.stderr
    assert "\x1b[" not in r.stdout  # no colour codes in a pipe
    assert "leaf04: 16 nodes, 128 devices, feature leaf04" in r.stdout
    assert "nodes h100-[061-064] (spec B)" in r.stdout
    assert "inter" in r.stdout and "infiniband-spine" in r.stdout


def test_export_to_file_and_errors(tmp_path):
    out = tmp_path / "topology.conf"
    r = snrun("export", "local", "--format", "topology-tree", "-o", str(out))
    assert r.returncode == 0 and r.stdout == ""
    assert "SwitchName=sn1 Nodes=n[4-7]" in out.read_text()
    r = snrun("export", "local", "--format", "gres", "--node-port-base", "17000")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "only applies to --format slurm-nodes" in r.stderr
    r = snrun("export", "tests/site/broken/bad_links.yaml", "--format", "json")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "bad_links.yaml:8:26: links.node.bandwidth_GBps must be > 0" in r.stderr
    r = snrun("export", "nosuchsite", "--format", "json")
    assert r.returncode == 2 and "unknown site 'nosuchsite'" in r.stderr


def test_list():
    r = snrun("list")
    assert r.returncode == 0
    names = [line.split()[0] for line in r.stdout.splitlines()]
    assert {"local", "nvl72", "ascend-superpod", "ib-8gpu"} <= set(names)
    assert "strategy block" in r.stdout


def test_export_for_a_slurm_version(tmp_path):
    r = snrun("export", "nvl72", "--format", "topology-block", "--slurm-version", "23.11")
    assert r.returncode == 0, r.stderr
    assert "BlockLevels=0-2" in r.stdout and "BlockSizes" not in r.stdout
    r = snrun("export", "nvl72", "--format", "topology-yaml", "--slurm-version", "24.11")
    assert r.returncode == 0 and "warning: Slurm 24.11 ignores topology.yaml" in r.stderr
    r = snrun("export", "nvl72", "--format", "topology-block", "--slurm-version", "22.05")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "no topology/block" in r.stderr
    r = snrun("export", "nvl72", "--format", "topology-block", "--slurm-version", "soon")
    assert r.returncode == 2 and "not a Slurm version" in r.stderr
