"""Which Slurm is this, and which super-node features can we use on it?

Debian 12 ships Slurm 22.05 (topology/tree only), Debian 13 ships 24.11 (topology/block,
`--segment`), forky 26.05 (topology.yaml). Everything is read from the running cluster, never
assumed from a version string alone: `scontrol show config` says which topology plugin is
loaded, but with topology.yaml (25.05+) it says `topology/flat` even when blocks are configured,
so blocks are also looked for in `scontrol show topology`; scrontab needs both the client and
`ScronParameters=enable`. Callers detect once and keep the result: nothing is cached here.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from typing import NamedTuple

from slurm_supernode.errors import SlurmError, SlurmErrorKind
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
        raise SlurmError(
            f"cannot read a Slurm version from {text.strip()!r}", kind=SlurmErrorKind.BAD_OUTPUT
        )
    return SlurmVersion(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))


def slurm_version() -> SlurmVersion:
    """The installed Slurm's version, from `sinfo --version` (needs a readable slurm.conf)."""
    return parse_version(run_slurm(["sinfo", "--version"], timeout=15).stdout)


def installed_version() -> SlurmVersion:
    """The local Slurm's version without a cluster: `sinfo --version` where a configuration is
    found, else the controller binary's `slurmctld -V` (admins export on the controller)."""
    try:
        return slurm_version()
    except SlurmError:
        return parse_version(run_slurm(["slurmctld", "-V"], timeout=15).stdout)


@dataclass(frozen=True)
class SlurmFeatures:
    """What this cluster's Slurm can do for super nodes.

    `has_block`: blocks are configured (topology/block in slurm.conf, or a block topology in
    topology.yaml: super nodes are blocks, `--segment` applies);
    `supports_block_plugin`: the version has topology/block (>= 23.11);
    `supports_segment`: `--segment` exists (>= 24.05); `has_scrontab`: a scrontab client is
    installed (Debian 12 has none) AND slurmctld has `ScronParameters=enable` (off by default:
    `scrontab is disabled on this cluster`); `scrontab_why_not`: why not, in words;
    `expedited_requeue`: see `expedite_enabled`.
    """

    version: SlurmVersion
    topology_plugin: str | None
    select_type: str | None
    has_block: bool
    supports_block_plugin: bool
    supports_segment: bool
    has_scrontab: bool
    scrontab_why_not: str | None = None
    # `sbatch --requeue=expedite` works: slurmctld has SlurmctldParameters=
    # enable_expedited_requeue AND the client has the option (25.11+)
    expedited_requeue: bool = False
    # switch/nvidia_imex is loaded (each job gets an IMEX channel: `imex_switch`), and the
    # controller gives one channel per segment on `--network=unique-channel-per-segment`
    # (25.11+: `channel_per_segment`)
    imex_switch: bool = False
    channel_per_segment: bool = False


def imex_switch_loaded(config: dict[str, str]) -> bool:
    """`SwitchType` of `scontrol show config` is switch/nvidia_imex (absent/`(null)`: none)."""
    return (config.get("SwitchType") or "").strip() == "switch/nvidia_imex"


def channel_per_segment(version: SlurmVersion, config: dict[str, str]) -> bool:
    """Does this Slurm give a job one IMEX channel per segment when asked? The plugin must be
    loaded and the release must have `--network=unique-channel-per-segment` (25.11: older
    controllers, and jobs of a <= 25.05 protocol, get one channel per job)."""
    return imex_switch_loaded(config) and version >= (25, 11)


def batch_step_has_channel(version: SlurmVersion, config: dict[str, str]) -> bool:
    """Does the batch step see the job's channel? From 25.11 (release notes; measured here:
    24.11's batch step sees an empty /dev/nvidia-caps-imex-channels). snrun never needs it:
    its ranks run in the agent's srun step, which has the channel on every release."""
    return imex_switch_loaded(config) and version >= (25, 11)


def scron_enabled(config: dict[str, str]) -> bool:
    """`ScronParameters=enable[,...]` in `scontrol show config` (absent or `(null)`: off)."""
    value = config.get("ScronParameters") or ""
    return "enable" in [w.strip().lower() for w in value.split(",")]


def topology_lists_blocks(text: str) -> bool:
    """Does `scontrol show topology` output describe blocks (`BlockName=...`)?"""
    return any(line.strip().startswith("BlockName=") for line in text.splitlines())


def features_from(
    version: SlurmVersion,
    config: dict[str, str],
    *,
    topology_text: str | None = None,
    scrontab_client: bool | None = None,
    sbatch_help: str | None = None,
) -> SlurmFeatures:
    """Pure part of `detect_features`: decide from a version, `scontrol show config`, and (when
    read) `scontrol show topology`; `scrontab_client`: is the client installed (None: look);
    `sbatch_help`: `sbatch --help` (read only where the controller allows expedited requeues)."""
    topo = config.get("TopologyPlugin") or None
    if topo in ("(null)", "none"):
        topo = None
    select = config.get("SelectType") or None
    has_block = topo == "topology/block" or (
        topology_text is not None and topology_lists_blocks(topology_text)
    )
    client = shutil.which("scrontab") is not None if scrontab_client is None else scrontab_client
    why_not = None
    if not client:
        why_not = "no scrontab client is installed (Debian 12's Slurm 22.05 has none)"
    elif not scron_enabled(config):
        why_not = "scrontab is disabled on this cluster (slurm.conf needs ScronParameters=enable)"
    return SlurmFeatures(
        version=version,
        topology_plugin=topo,
        select_type=select,
        has_block=has_block,
        supports_block_plugin=version >= (23, 11),
        supports_segment=version >= (24, 5),
        has_scrontab=why_not is None,
        scrontab_why_not=why_not,
        expedited_requeue=expedite_enabled(config) and client_has_expedite(sbatch_help or ""),
        imex_switch=imex_switch_loaded(config),
        channel_per_segment=channel_per_segment(version, config),
    )


def _needs_topology_probe(version: SlurmVersion, config: dict[str, str]) -> bool:
    """Blocks may hide behind another plugin name only where topology.yaml exists (25.05+)."""
    topo = config.get("TopologyPlugin") or ""
    return version >= (25, 5) and topo not in ("topology/block", "topology/tree")


def detect_features() -> SlurmFeatures:
    """Ask the running cluster (two or three commands); raises SlurmError if unreachable."""
    version = slurm_version()
    config = parse_config(run_slurm(["scontrol", "show", "config"], timeout=30).stdout)
    topology_text = None
    if _needs_topology_probe(version, config):
        proc = run_slurm(["scontrol", "show", "topology"], timeout=30, check=False)
        topology_text = proc.stdout if proc.returncode == 0 else ""
        if not topology_lists_blocks(topology_text):
            # 26.05 lists a named topology only when asked for it by name.
            proc = run_slurm(["scontrol", "show", "topology", "block"], timeout=30, check=False)
            topology_text += proc.stdout if proc.returncode == 0 else ""
    sbatch_help = None
    if expedite_enabled(config):  # the client is asked only where the controller allows it
        proc = run_slurm(["sbatch", "--help"], timeout=30, check=False)
        sbatch_help = proc.stdout + proc.stderr
    return features_from(version, config, topology_text=topology_text, sbatch_help=sbatch_help)


def expedite_enabled(config: dict[str, str]) -> bool:
    """`SlurmctldParameters` of `scontrol show config` lists `enable_expedited_requeue`
    (without it slurmctld refuses `--requeue=expedite`: `Requested operation not supported on
    this system`)."""
    value = config.get("SlurmctldParameters") or ""
    return "enable_expedited_requeue" in [w.strip().lower() for w in value.split(",")]


def client_has_expedite(sbatch_help: str) -> bool:
    """`sbatch --help` offers `--requeue[=expedite]` (a client older than the controller may
    not have the option)."""
    return "--requeue[=expedite]" in sbatch_help or "--requeue=expedite" in sbatch_help


def kills_detached_processes(config: dict[str, str]) -> bool:
    """`ProctrackType=proctrack/cgroup`: every process started from the job, even one that
    left its session (`setsid`), is in the job's cgroup and is killed when the job ends."""
    return (config.get("ProctrackType") or "").strip() == "proctrack/cgroup"


def detached_process_survives() -> bool:
    """Does a process the job detaches (snrun's releaser) outlive the job on this cluster?
    Read from `scontrol show config`; raises SlurmError if the controller is unreachable."""
    config = parse_config(run_slurm(["scontrol", "show", "config"], timeout=30).stdout)
    return not kills_detached_processes(config)


def accounting_storage(config: dict[str, str]) -> str | None:
    """`AccountingStorageType` of `scontrol show config` (`accounting_storage/slurmdbd`), None
    when accounting is off (`accounting_storage/none`, absent, `(null)`)."""
    value = (config.get("AccountingStorageType") or "").strip()
    if value in ("", "(null)", "none", "accounting_storage/none"):
        return None
    return value


def detect_accounting() -> str | None:
    """The running cluster's accounting storage (one `scontrol show config`): what decides
    whether `sacct` (and `sacct --json`) can answer from accounting, or only `sacct -c` can."""
    return accounting_storage(
        parse_config(run_slurm(["scontrol", "show", "config"], timeout=30).stdout)
    )
