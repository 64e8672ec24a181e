"""Which Slurm is this, and which super-node features can we use on it?

Debian 12 ships Slurm 22.05 (topology/tree only), Debian 13 ships 24.11 (topology/block,
`--segment`). Callers detect once and keep the result: nothing is cached here.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from typing import NamedTuple

from slurm_supernode.errors import SlurmError
from slurm_supernode.slurm.parse import parse_config
from slurm_supernode.slurm.runner import run_slurm

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


class SlurmVersion(NamedTuple):
    """Slurm's release as numbers, comparable with tuples: `v >= (23, 11)`."""

    major: int
    minor: int
    patch: int = 0

    def __str__(self) -> str:
        return f"{self.major}.{self.minor:02d}.{self.patch}"


def parse_version(text: str) -> SlurmVersion:
    """`slurm 22.05.8`, `slurm-wlm 24.11.1`, `slurm 23.02.0-0rc1` -> SlurmVersion."""
    m = _VERSION.search(text)
    if not m:
        raise SlurmError(f"cannot read a Slurm version from {text.strip()!r}")
    return SlurmVersion(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))


def slurm_version() -> SlurmVersion:
    """The installed Slurm's version, from `sinfo --version` (needs a readable slurm.conf)."""
    return parse_version(run_slurm(["sinfo", "--version"], timeout=15).stdout)


@dataclass(frozen=True)
class SlurmFeatures:
    """What this cluster's Slurm can do for super nodes.

    `has_block`: topology/block is configured (super nodes are blocks, `--segment` applies);
    `supports_block_plugin`: the version has topology/block (>= 23.11);
    `supports_segment`: `--segment` exists (>= 24.05); `has_scrontab`: a scrontab client is
    installed (Debian 12 has none).
    """

    version: SlurmVersion
    topology_plugin: str | None
    select_type: str | None
    has_block: bool
    supports_block_plugin: bool
    supports_segment: bool
    has_scrontab: bool


def features_from(version: SlurmVersion, config: dict[str, str]) -> SlurmFeatures:
    """Pure part of `detect_features`: decide from a version and `scontrol show config`."""
    topo = config.get("TopologyPlugin") or None
    if topo in ("(null)", "none"):
        topo = None
    select = config.get("SelectType") or None
    return SlurmFeatures(
        version=version,
        topology_plugin=topo,
        select_type=select,
        has_block=topo == "topology/block",
        supports_block_plugin=version >= (23, 11),
        supports_segment=version >= (24, 5),
        has_scrontab=shutil.which("scrontab") is not None,
    )


def detect_features() -> SlurmFeatures:
    """Ask the running cluster (two commands); raises SlurmError if it cannot be reached."""
    version = slurm_version()
    config = parse_config(run_slurm(["scontrol", "show", "config"], timeout=30).stdout)
    return features_from(version, config)
