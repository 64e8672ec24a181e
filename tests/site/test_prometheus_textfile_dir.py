"""paths.prometheus_textfile_dir: where each job's agent keeps its node's Prometheus textfile."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_supernode.errors import InputError
from slurm_supernode.site.loader import load_site

LOCAL = Path(__file__).resolve().parents[2] / "site-configs" / "local.yaml"


def with_paths_line(tmp_path: Path, line: str) -> Path:
    text = LOCAL.read_text().replace("paths:\n", f"paths:\n{line}\n", 1)
    out = tmp_path / "site.yaml"
    out.write_text(text)
    return out


def test_default_is_none_written():
    assert load_site(LOCAL).paths.prometheus_textfile_dir == ""


def test_set(tmp_path):
    site = load_site(with_paths_line(tmp_path, "  prometheus_textfile_dir: /var/lib/ne/textfile"))
    assert site.paths.prometheus_textfile_dir == "/var/lib/ne/textfile"


def test_a_number_is_refused_at_its_line(tmp_path):
    with pytest.raises(InputError) as exc:
        load_site(with_paths_line(tmp_path, "  prometheus_textfile_dir: 5"))
    assert "paths.prometheus_textfile_dir: expected a path, got integer" in str(exc.value)
    assert "site.yaml:" in str(exc.value)
