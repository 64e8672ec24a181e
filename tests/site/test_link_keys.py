"""Link bandwidth keys say their unit: ``bandwidth_GBps`` (gigabytes per second).

The old key ``bandwidth_gbps`` named gigabits but was always read as GB/s; a site that still
uses it is refused with one located line that names the new key, never read silently.
"""

from __future__ import annotations

import subprocess
import sys

from slurm_supernode.site.loader import parse_site

HEAD = """name: t
vendor: nvidia
supernodes:
  - {name: sn0, nodes: "n[0-3]"}
node_defaults: {devices: 8}
links:
"""


def _problems(links: str) -> list[str]:
    _site, problems = parse_site(HEAD + links, "t.yaml")
    return [str(p) for p in problems]


def test_new_key_is_read_as_gigabytes_per_second():
    site, problems = parse_site(
        HEAD
        + "  node: {bandwidth_GBps: 450, latency_us: 2}\n"
        + "  supernode: {bandwidth_GBps: 200, latency_us: 4}\n"
        + "  inter: {bandwidth_GBps: 50, latency_us: 8}\n",
        "t.yaml",
    )
    assert problems == []
    assert site.links["node"].bandwidth_GBps == 450
    assert site.links["inter"].bandwidth_GBps == 50


def test_old_key_is_refused_with_location_and_new_name():
    probs = _problems(
        "  node: {bandwidth_gbps: 450, latency_us: 2}\n"
        "  supernode: {bandwidth_GBps: 200, latency_us: 4}\n"
        "  inter: {bandwidth_GBps: 50, latency_us: 8}\n"
    )
    assert len(probs) == 1, probs
    assert probs[0].startswith("t.yaml:7:10: links.node.bandwidth_gbps is the old name")
    assert "rename the key to bandwidth_GBps" in probs[0]
    assert "\n" not in probs[0]


def test_missing_bandwidth_and_latency_are_named():
    probs = _problems(
        "  node: {latency_us: 2}\n"
        "  supernode: {bandwidth_GBps: 200}\n"
        "  inter: {bandwidth_GBps: 50, latency_us: 8}\n"
    )
    assert any("links.node is missing required key 'bandwidth_GBps'" in p for p in probs)
    assert any("links.supernode is missing required key 'latency_us'" in p for p in probs)


def test_cli_exit_code_and_one_line(tmp_path):
    path = tmp_path / "old.yaml"
    path.write_text(
        HEAD
        + "  node: {bandwidth_gbps: 450, latency_us: 2}\n"
        + "  supernode: {bandwidth_GBps: 200, latency_us: 4}\n"
        + "  inter: {bandwidth_GBps: 50, latency_us: 8}\n"
    )
    r = subprocess.run(
        [sys.executable, "-m", "slurm_supernode", "site", "show", str(path)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1
    assert f"{path}:7:10: links.node.bandwidth_gbps is the old name" in lines[0]


def test_optional_cross_island_level():
    site, problems = parse_site(
        HEAD
        + "  node: {bandwidth_GBps: 450, latency_us: 2}\n"
        + "  cross_island: {bandwidth_GBps: 64, latency_us: 3, kind: pcie}\n"
        + "  supernode: {bandwidth_GBps: 200, latency_us: 4}\n"
        + "  inter: {bandwidth_GBps: 50, latency_us: 8}\n",
        "t.yaml",
    )
    assert problems == []
    assert site.links["cross_island"].bandwidth_GBps == 64
    assert site.links["cross_island"].kind == "pcie"
    bad = _problems(
        "  node: {bandwidth_GBps: 450, latency_us: 2}\n"
        "  cross_island: {bandwidth_GBps: 0, latency_us: 3}\n"
        "  supernode: {bandwidth_GBps: 200, latency_us: 4}\n"
        "  inter: {bandwidth_GBps: 50, latency_us: 8}\n"
    )
    assert any("links.cross_island.bandwidth_GBps must be > 0" in p for p in bad)
