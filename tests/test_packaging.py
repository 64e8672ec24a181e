"""The wheel carries templates/ and site-configs/, so a pip-installed snrun finds them."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_ships_templates_and_site_configs(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("slurm_supernode-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for tmpl in (ROOT / "templates").iterdir():
        assert f"slurm_supernode/_data/templates/{tmpl.name}" in names
    for site in (ROOT / "site-configs").glob("*.yaml"):
        assert f"slurm_supernode/_data/site-configs/{site.name}" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "snrun = slurm_supernode.cli.main:entry" in zipfile.ZipFile(wheel).read(entry).decode()
