"""Shared by the Slurm-layer tests: fake Slurm binaries on PATH."""

from __future__ import annotations

import stat

import pytest


@pytest.fixture
def fake_bin(tmp_path, monkeypatch):
    """A PATH holding only the fake Slurm commands a test writes (plus the basics)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    monkeypatch.delenv("SLURM_CONF", raising=False)

    def write(name: str, body: str) -> None:
        path = bindir / name
        path.write_text("#!/bin/bash\n" + body + "\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)

    return write
