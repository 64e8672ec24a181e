"""`snrun health` on a node described by a site file, with device files in a temp dir."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from slurm_supernode.cli.main import main

ROOT = Path(__file__).resolve().parents[2]

SITE = """\
name: h
vendor: nvidia
supernodes:
  - {{name: sn0, nodes: "n[0-1]"}}
node_defaults:
  devices: 4
  device_groups: [[0, 1, 2, 3]]
  gres_file: {dev}/nvidia[0-3]
links:
  node: {{bandwidth_GBps: 1, latency_us: 1}}
  supernode: {{bandwidth_GBps: 1, latency_us: 1}}
  inter: {{bandwidth_GBps: 1, latency_us: 1}}
{extra}"""


def _site(tmp_path, devices: int, extra: str = "", name: str = "site.yaml") -> str:
    dev = tmp_path / "dev"
    dev.mkdir(exist_ok=True)
    for i in range(devices):
        (dev / f"nvidia{i}").touch()
    path = tmp_path / name
    path.write_text(SITE.format(dev=dev, extra=extra))
    return str(path)


def test_missing_device_is_critical_exit_2(tmp_path, capsys):
    site = _site(tmp_path, 3)
    assert main(["health", "--site", site, "--node", "n1"]) == 2
    out = capsys.readouterr().out
    assert out.startswith("SNRUN HEALTH CRITICAL - n1: devices: 3 of 4")
    assert "nvidia3" in out


def test_all_devices_ok_and_json(tmp_path, capsys):
    site = _site(tmp_path, 4)
    assert main(["health", "--site", site, "--node", "n0", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == 0 and data["checks"][0]["message"] == "4 of 4 devices visible"
    assert main(["health", "--site", site, "--node", "n0", "--expect-devices", "5"]) == 2


def test_unknown_node_without_expectation_is_unknown(tmp_path, capsys):
    site = _site(tmp_path, 4)
    assert main(["health", "--site", site, "--node", "zz9"]) == 3
    assert "UNKNOWN" in capsys.readouterr().out


def test_imex_channels_checked_only_on_flagged_sites(tmp_path, capsys, monkeypatch):
    from slurm_supernode.health import probe

    channels = tmp_path / "imex"
    monkeypatch.setattr(probe, "IMEX_DIR", str(channels))
    plain, flagged = _site(tmp_path, 4), _site(tmp_path, 4, "imex_channels: true\n", "imex.yaml")
    assert main(["health", "--site", plain, "--node", "n0"]) == 0
    assert main(["health", "--site", flagged, "--node", "n0"]) == 2
    assert "no IMEX channel devices" in capsys.readouterr().out
    channels.mkdir()
    (channels / "channel0").touch()
    assert main(["health", "--site", flagged, "--node", "n0"]) == 0


def test_free_space_threshold(tmp_path, capsys):
    site = _site(tmp_path, 4)
    argv = ["health", "--site", site, "--node", "n0", "--path", str(tmp_path)]
    assert main([*argv, "--min-free-gb", "0.000001"]) == 0
    assert main([*argv, "--min-free-gb", "1e12"]) == 2
    assert "GB free <" in capsys.readouterr().out
    assert main(["health", "--site", site, "--path", "/tmp"]) == 2  # --path needs --min-free-gb


def test_health_never_imports_torch(tmp_path):
    site = _site(tmp_path, 4)
    code = (
        "import sys; from slurm_supernode.cli.main import main; "
        f"rc = main(['health', '--site', {site!r}, '--node', 'n0']); "
        "print('TORCH' if 'torch' in sys.modules else 'NOTORCH', rc)"
    )
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=env, timeout=60
    )
    assert out.stdout.split()[-2:] == ["NOTORCH", "0"], out.stderr
