"""contrib/minicluster/vendor-source: the release archives the container and Slurm 25.11 clusters
build from, each checked against its pinned sha256, found beside the repository (CI) or fetched
from its upstream address; where none can be had, one line says what to download and where.
Downloading itself is tested with a file:// address (no network here)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "contrib" / "minicluster" / "vendor-source"
LIST = ROOT / "contrib" / "minicluster" / "vendor-sources.txt"
REGISTRY_HOSTS = ("pypi.org", "deb.debian.org", "files.pythonhosted.org", "crates.io")


def _pinned() -> dict[str, tuple[str, str]]:
    rows = [line.split() for line in LIST.read_text().splitlines()]
    return {r[0]: (r[1], r[2]) for r in rows if r and not r[0].startswith("#")}


def _run(name: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SNRUN_MC_")}
    environ |= {"SNRUN_MC_CACHE": str(tmp_path / "cache"), **env}
    return subprocess.run(
        [str(SCRIPT), name], capture_output=True, text=True, env=environ, timeout=60
    )


def _one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1 and proc.stdout == "", (proc.stdout, proc.stderr)
    # a download attempt says so first; the error itself is one line, the last
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("vendor-source: downl")]
    assert len(lines) == 1 and lines[0].startswith("vendor-source: error: "), proc.stderr
    assert proc.stderr.endswith(lines[0] + "\n")
    return lines[0]


def test_the_pins_are_the_vendored_releases_at_their_upstream_tags():
    pins = _pinned()
    assert set(pins) == {"pyxis-0.24.0.tar.gz", "enroot-4.1.2.tar.gz", "slurm-25.11.7.tar.gz"}
    readme = ROOT.parent / "shared" / "vendor" / "README.md"
    for name, (sha, url) in pins.items():
        assert len(sha) == 64 and url.startswith("https://github.com/"), (name, url)
        assert not any(host in url for host in REGISTRY_HOSTS)
        if readme.is_file():  # CI: the same checksums as the copies it has
            assert f"| {name} |" in readme.read_text() and sha in readme.read_text()


def test_a_vendored_copy_is_used_when_it_has_the_pinned_checksum(tmp_path):
    name = "pyxis-0.24.0.tar.gz"
    sha, _ = _pinned()[name]
    vendor = ROOT.parent / "shared" / "vendor"
    if not (vendor / name).is_file():
        pytest.skip("no ../shared/vendor beside the repository (only CI has it)")
    assert hashlib.sha256((vendor / name).read_bytes()).hexdigest() == sha
    proc = _run(name, tmp_path, SNRUN_MC_VENDOR=str(vendor))
    assert proc.returncode == 0 and proc.stdout.strip() == str((vendor / name).resolve())


def _fake_list(tmp_path: Path, payload: bytes, url: str) -> Path:
    listed = tmp_path / "sources.txt"
    sha = hashlib.sha256(payload).hexdigest()
    listed.write_text(f"# test\npyxis-0.24.0.tar.gz {sha} {url}\n")
    return listed


def test_a_corrupt_copy_is_refused_in_one_line_saying_what_to_download(tmp_path):
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    (vendor / "pyxis-0.24.0.tar.gz").write_bytes(b"not the release")
    listed = _fake_list(tmp_path, b"the release", "https://github.com/NVIDIA/pyxis/x.tar.gz")
    line = _one_line_error(
        _run("pyxis-0.24.0.tar.gz", tmp_path, SNRUN_MC_VENDOR=str(vendor),
             SNRUN_MC_VENDOR_LIST=str(listed), SNRUN_MC_NO_DOWNLOAD="1")
    )  # fmt: skip
    assert "is not the pinned release (sha256 differs)" in line
    assert "download https://github.com/NVIDIA/pyxis/x.tar.gz" in line
    assert f"as {tmp_path / 'cache' / 'src' / 'pyxis-0.24.0.tar.gz'}" in line


def test_a_missing_copy_says_what_to_download_and_where(tmp_path):
    listed = _fake_list(tmp_path, b"the release", "https://github.com/NVIDIA/pyxis/x.tar.gz")
    env = {"SNRUN_MC_VENDOR": str(tmp_path / "none"), "SNRUN_MC_VENDOR_LIST": str(listed)}
    line = _one_line_error(_run("pyxis-0.24.0.tar.gz", tmp_path, SNRUN_MC_NO_DOWNLOAD="1", **env))
    assert "pyxis-0.24.0.tar.gz is missing" in line and "sha256 " in line
    # an address that cannot be fetched: the same advice
    env["SNRUN_MC_VENDOR_LIST"] = str(_fake_list(tmp_path, b"x", f"file://{tmp_path}/gone"))
    line = _one_line_error(_run("pyxis-0.24.0.tar.gz", tmp_path, **env))
    assert "could not be downloaded" in line and f"download file://{tmp_path}/gone" in line
    assert not (tmp_path / "cache" / "src" / "pyxis-0.24.0.tar.gz").exists()
    assert "not in" in _one_line_error(_run("other.tar.gz", tmp_path, **env))


def test_a_download_is_checked_then_kept_in_the_cache(tmp_path):
    upstream = tmp_path / "upstream.tar.gz"
    upstream.write_bytes(b"the release")
    env = {"SNRUN_MC_VENDOR": str(tmp_path / "none")}
    env["SNRUN_MC_VENDOR_LIST"] = str(_fake_list(tmp_path, b"the release", f"file://{upstream}"))
    proc = _run("pyxis-0.24.0.tar.gz", tmp_path, **env)
    kept = tmp_path / "cache" / "src" / "pyxis-0.24.0.tar.gz"
    assert proc.returncode == 0 and proc.stdout.strip() == str(kept), proc.stderr
    assert kept.read_bytes() == b"the release"
    assert _run("pyxis-0.24.0.tar.gz", tmp_path, **env).stderr == ""  # found: no download
    # what a mirror serves that is not the release is refused and not kept
    kept.unlink()
    upstream.write_bytes(b"something else")
    assert "sha256 differs" in _one_line_error(_run("pyxis-0.24.0.tar.gz", tmp_path, **env))
    assert list((tmp_path / "cache" / "src").iterdir()) == []
