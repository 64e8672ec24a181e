"""The site's imex_channels key (bool or mapping) and what the site exports for the plugin."""

from __future__ import annotations

import pytest

from slurm_supernode.errors import InputError
from slurm_supernode.site.export import export
from slurm_supernode.site.loader import parse_site
from slurm_supernode.site.model import ImexSettings

BASE = """\
name: t
vendor: nvidia
supernodes:
  - name: sn0
    nodes: n[0-3]
  - name: sn1
    nodes: n[4-7]
node_defaults: {devices: 4}
links:
  node: {bandwidth_GBps: 900, latency_us: 2}
  supernode: {bandwidth_GBps: 900, latency_us: 3}
  inter: {bandwidth_GBps: 50, latency_us: 8}
"""


def load(extra: str):
    site, problems = parse_site(BASE + extra, "site.yaml")
    if problems:
        raise InputError(
            "; ".join(f"{p.file}:{p.line}:{p.col}: {p.message} ({p.hint})" for p in problems)
        )
    return site


def test_short_form_and_absent():
    assert not load("").imex_channels and load("").imex == ImexSettings()
    site = load("imex_channels: true\n")
    assert site.imex_channels and site.imex == ImexSettings() and not site.imex.per_segment


def test_mapping_form_says_how():
    site = load(
        "imex_channels:\n  per_segment: true\n  dev_major: 511\n  channel_count: 8\n"
        "  wait_s: 30\n  preflight: false\n  nodes_config: /etc/imex/nodes.cfg\n"
    )
    assert site.imex_channels
    assert site.imex == ImexSettings(
        per_segment=True,
        channel_count=8,
        dev_major=511,
        preflight=False,
        nodes_config="/etc/imex/nodes.cfg",
        wait_s=30,
    )
    off = load("imex_channels:\n  enabled: false\n  per_segment: true\n")
    assert not off.imex_channels and off.imex.per_segment


@pytest.mark.parametrize(
    ("extra", "line", "fragment"),
    [
        ("imex_channels:\n  channel_count: 1\n", 14, "must be >= 2"),
        ("imex_channels:\n  channel_count: 4096\n", 14, "must be <= 2048"),
        ("imex_channels:\n  dev_major: x\n", 14, "must be an integer"),
        ("imex_channels:\n  per_segmnt: true\n", 14, "did you mean 'per_segment'"),
        ("imex_channels:\n  config: etc/imex.cfg\n", 14, "absolute path"),
        ("imex_channels:\n  config: /etc/a b.cfg\n", 14, "absolute path"),
        ("imex_channels: [1]\n", 13, "must be true or false"),
    ],
)
def test_bad_values_are_named_with_their_line(extra, line, fragment):
    with pytest.raises(InputError) as err:
        load(extra)
    text = str(err.value)
    assert f"site.yaml:{line}:" in text and fragment in text


def test_export_writes_the_switch_lines():
    text = export(load("imex_channels:\n  dev_major: 511\n  channel_count: 8\n"), "imex")
    lines = [x for x in text.splitlines() if not x.startswith("#")]
    assert lines == [
        "SwitchType=switch/nvidia_imex",
        "SwitchParameters=imex_dev_major=511,imex_channel_count=8",
    ]
    # no major: the plugin reads it from /proc/devices on the node
    assert "SwitchParameters=imex_channel_count=2048\n" in export(
        load("imex_channels: true\n"), "imex"
    )


def test_json_export_has_the_settings():
    import json

    data = json.loads(export(load("imex_channels:\n  per_segment: true\n"), "json"))
    assert data["imex_channels"] is True and data["imex"]["per_segment"] is True
