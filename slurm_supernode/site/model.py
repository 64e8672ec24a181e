"""The site model: typed, immutable, already validated.

Everything downstream (placement, request, render, bench) reads these dataclasses; the YAML
loader in ``loader.py`` is the only place that builds them from files. Node order inside a
super node is physical (rack, then slot), never alphabetical.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

VENDORS = ("nvidia", "ascend")
STRATEGIES = ("auto", "block", "features", "switches")
# slurm.small_jobs: what job_submit.lua does with a job that fits in one super node: "whole"
# rounds it up to the whole super node, "aligned" keeps its node count and only keeps it
# inside one super node.
SMALL_JOB_POLICIES = ("whole", "aligned")
# Link levels, innermost first: inside one node, inside one super node, between super nodes.
LINK_LEVELS = ("node", "supernode", "inter")
# Optional level: between device islands of one node (e.g. two HCCS or NVLink islands joined
# by PCIe). The planner prices groups that cross an island with it; absent, with `supernode`.
CROSS_ISLAND = "cross_island"
# Failure classes with a restart budget (site `restarts:`; snrun --max-restarts sets the first four)
RESTART_CAUSES = (
    "app_error", "hang", "node_failure", "health", "imex", "time_limit", "preemption", "slow",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class LinkLevel:
    """Bandwidth per device (GB/s, one direction) and latency of one level of the hierarchy."""

    name: str
    bandwidth_GBps: float
    latency_us: float
    kind: str = ""  # free text: "nvlink", "hccs", "infiniband", "roce", ...


@dataclass(frozen=True, slots=True)
class NicSpec:
    """Network interfaces of a node: the socket interface for bootstrap, HCAs for RDMA."""

    socket_ifname: str | None = None
    hcas: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """Hardware of one node: shared by every node that uses the same defaults/overrides."""

    devices: int
    # Islands of devices sharing the fastest links inside the node, in the order ranks fill them.
    # Always covers 0..devices-1 exactly once (the loader checks it).
    device_groups: tuple[tuple[int, ...], ...]
    nics: NicSpec = NicSpec()
    gres_type: str | None = None  # e.g. "h100" in gres.conf / slurm.conf Gres=gpu:h100:8
    gres_file: str | None = None  # e.g. "/dev/nvidia[0-7]"
    cpus: int | None = None
    memory_mb: int | None = None
    device_memory_gb: float | None = None  # memory of one device (GPU/NPU), GB

    @property
    def device_order(self) -> tuple[int, ...]:
        """Device ids in placement order: island by island."""
        return tuple(d for group in self.device_groups for d in group)


@dataclass(frozen=True, slots=True)
class Node:
    """One server. ``index`` is its physical position inside its super node (0-based)."""

    hostname: str
    supernode: str
    index: int
    spec: NodeSpec
    rack: str | None = None
    slot: int | None = None
    # Ascend only: one IP per device (device id order), host IP for the rank table.
    device_ips: tuple[str, ...] = ()
    host_ip: str | None = None

    @property
    def devices(self) -> int:
        return self.spec.devices


@dataclass(frozen=True, slots=True)
class SuperNode:
    """A group of nodes joined by the fast interconnect, scheduled as one unit."""

    name: str
    nodes: tuple[Node, ...]  # physical order
    feature: str  # Slurm node feature that names this super node
    super_pod_id: int | None = None  # Ascend SuperPoD id (rank table v1.2)
    # Nodes held in reserve: a job asks for len(nodes) - spares of them, so a failed node can be
    # replaced by a spare of the same super node (e.g. 18 NVL72 trays: 16 used, 2 spare).
    spares: int = 0

    @property
    def hostnames(self) -> tuple[str, ...]:
        return tuple(n.hostname for n in self.nodes)

    @property
    def devices(self) -> int:
        return sum(n.devices for n in self.nodes)

    @property
    def job_size(self) -> int:
        """Nodes a job takes from this super node: all but the spares."""
        return len(self.nodes) - self.spares


@dataclass(frozen=True, slots=True)
class SlurmSettings:
    """How this site maps onto Slurm."""

    partition: str | None = None
    # Format of the per-super-node feature; {name} is the super node name.
    feature_format: str = "{name}"
    strategy: str = "auto"  # one of STRATEGIES
    # Names used by the topology exporters.
    spine_switch: str = "spine"
    # Partitions on which the job_submit plugin enforces whole super nodes.
    supernode_partitions: tuple[str, ...] = ()
    # job_submit.lua's rule for jobs that fit in one super node (one of SMALL_JOB_POLICIES)
    small_jobs: str = "aligned"
    gres_name: str = "gpu"
    # Extra NodeName= attributes for every node, in order (e.g. NodeHostname=localhost,
    # NodeAddr=127.0.0.1 so several slurmd share one host in the local test cluster).
    node_options: tuple[tuple[str, str], ...] = ()


class EnvProfile(NamedTuple):
    """Environment variables for the collective library (NCCL/HCCL) and PyTorch."""

    name: str
    vars: tuple[tuple[str, str], ...]  # ordered pairs; later wins on merge

    def as_dict(self) -> dict[str, str]:
        return dict(self.vars)


# The regression report's defaults: a site without a bench section and bench/report.Thresholds
# both take them from here.
DEFAULT_REGRESSION_PCT = 10.0
DEFAULT_BASELINE_RUNS = 7


@dataclass(frozen=True, slots=True)
class BenchSettings:
    """Thresholds for the nightly bandwidth regression report."""

    regression_pct: float = (
        DEFAULT_REGRESSION_PCT  # flag when busbw drops more than this below the baseline
    )
    baseline_runs: int = DEFAULT_BASELINE_RUNS  # rolling baseline: median of the last N good runs
    sizes: tuple[int, ...] = ()  # message sizes in bytes; empty: the bench default sweep
    min_busbw_gbps: tuple[tuple[str, float], ...] = ()  # (scope, floor) pairs
    # the image every bench job runs in unless it names one ("": on the host); read by the
    # runtime of containers: (docs/containers.md)
    container_image: str = ""


@dataclass(frozen=True, slots=True)
class DoctorSettings:
    """What ``snrun doctor`` expects of this site (its verdict thresholds)."""

    bandwidth_warn: float = 0.6  # busbw / link bandwidth below this: warn
    bandwidth_fail: float = 0.4  # below this: fail (one field report measured 40% of spec)
    slow_pct: float = 20.0  # a node, pair or super node this % below its peers' median: slow
    size: int = 256 << 20  # largest all-reduce message on devices (bytes)
    min_tflops: float = 0.0  # per-device matmul floor (0: compare devices with each other)
    checkpoint_dir: str = ""  # also tested for storage ("" : only the job directory)
    storage_mb: int = 256  # written and read back per node and directory
    min_write_mbps: float = 0.0  # MB/s (10^6 bytes); 0: no floor
    min_read_mbps: float = 0.0
    min_free_gb: float = 0.0  # GB (10^9 bytes); 0: no floor


@dataclass(frozen=True, slots=True)
class PathSettings:
    """Where job state and benchmark results live (``~`` and ``$VARS`` expanded at use)."""

    jobs_dir: str = "~/.snrun/jobs"
    results_db: str = "~/.snrun/bench.sqlite"
    state_dir: str = "~/.snrun"  # small registries (bench schedules)
    # node_exporter's textfile collector directory on every node: each job's agent keeps a
    # snrun-<job>-<node>.prom there while the job runs (docs/observe.md); "": none written
    prometheus_textfile_dir: str = ""


@dataclass(frozen=True, slots=True)
class ObserveSettings:
    """``observe:``: how a running job is watched (docs/observe.md)."""

    sample_period: float = 10.0  # seconds between the agent's node and device samples
    samples_mb: float = 64.0  # most MB of samples one node writes per attempt (then it stops)
    slow_pct: float = 20.0  # a node whose step time is this % above its peers' median: slow
    slow_windows: int = 3  # ... in this many consecutive judge windows (5 s each) in a row
    profile_after: int = 50  # the optimizer step after which every rank is profiled once
    profile_steps: int = 3  # steps in that profiler window (0: no profiling)
    # a Prometheus Pushgateway's URL (http[s]://host:port): every node of a job pushes its
    # series there while the job runs (docs/observe.md); "": none pushed
    pushgateway: str = ""


# Container runtimes snrun renders for (docs/containers.md); "none": the site has none.
CONTAINER_RUNTIMES = ("pyxis", "oci", "apptainer")
RUNTIME_CHOICES = (*CONTAINER_RUNTIMES, "auto", "none")  # what containers.runtime may say


@dataclass(frozen=True, slots=True)
class ContainerSettings:
    """``containers:``: which runtime the site has and what every container gets."""

    # one of CONTAINER_RUNTIMES; "auto": the one the running Slurm offers (pyxis, oci,
    # apptainer: slurm.container_runtimes); "none": --container-image refused
    runtime: str = "auto"
    python: str = "python3"  # the interpreter inside images that runs torchrun
    image_dir: str = ""  # where images are kept: relative --container-image names resolve here
    mounts: tuple[str, ...] = ()  # SRC:DST[:ro] added to every container (after the vendor's)
    vendor_mounts: bool = True  # the vendor's device/driver mounts, where a node has them
    env: tuple[str, ...] = ()  # variables always passed from the job into the container
    # more options of the runtime on every launch: apptainer exec's (--userns, --nv...),
    # or pyxis' srun options (--container-remap-root...); Slurm OCI takes none (config.json)
    options: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ImexSettings:
    """``imex_channels:`` as a mapping: how Slurm's switch/nvidia_imex serves the trays
    (site/imex.py reads it; ``imex_channels: true`` is the short form with these defaults)."""

    # a job spanning super nodes gets one channel per segment (per NVLink domain):
    # `--network=unique-channel-per-segment`, asked for where the running Slurm has it (25.11+)
    per_segment: bool = False
    channel_count: int = 2048  # SwitchParameters=imex_channel_count (channel 0 is reserved)
    dev_major: int | None = None  # SwitchParameters=imex_dev_major (None: /proc/devices)
    # the agent's check before rendezvous: channel device, IMEX domain, fabric clique
    preflight: bool = True
    # the prolog/epilog pair (site export --format imex-prolog|imex-epilog)
    config: str = "/etc/nvidia-imex/config.cfg"  # nvidia-imex's config (names the node list)
    nodes_config: str = "/etc/nvidia-imex/nodes_config.cfg"  # written per job by the prolog
    wait_s: int = 120  # how long the prolog waits for the domain to come UP


@dataclass(frozen=True)
class Site:
    """A whole site: super nodes in physical order plus how to talk to Slurm and the fabric."""

    name: str
    vendor: str  # one of VENDORS
    supernodes: tuple[SuperNode, ...]
    links: dict[str, LinkLevel]  # keyed by LINK_LEVELS
    slurm: SlurmSettings = SlurmSettings()
    env_profiles: dict[str, EnvProfile] = field(default_factory=dict)
    bench: BenchSettings = BenchSettings()
    paths: PathSettings = PathSettings()
    doctor: DoctorSettings = DoctorSettings()
    # Multi-node NVLink (NVL72): nodes need IMEX channel devices (/dev/nvidia-caps-imex-channels)
    imex_channels: bool = False
    imex: ImexSettings = ImexSettings()  # how (imex_channels as a mapping; site/imex.py)
    restarts: tuple[tuple[str, int], ...] = ()  # (cause, budget): the site's defaults
    containers: ContainerSettings = ContainerSettings()
    observe: ObserveSettings = ObserveSettings()
    source: str | None = None  # file it was loaded from
    _by_host: dict[str, Node] = field(init=False, repr=False, compare=False)
    _by_sn: dict[str, SuperNode] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "_by_host", {n.hostname: n for sn in self.supernodes for n in sn.nodes}
        )
        object.__setattr__(self, "_by_sn", {sn.name: sn for sn in self.supernodes})

    # -- lookups -------------------------------------------------------------------------
    def node(self, hostname: str) -> Node:
        """The node of that hostname; KeyError if the site does not have it."""
        return self._by_host[hostname]

    def has_node(self, hostname: str) -> bool:
        return hostname in self._by_host

    def supernode(self, name: str) -> SuperNode:
        return self._by_sn[name]

    def supernode_of(self, hostname: str) -> SuperNode:
        return self._by_sn[self._by_host[hostname].supernode]

    @property
    def nodes(self) -> tuple[Node, ...]:
        """All nodes in physical order: super node by super node."""
        return tuple(n for sn in self.supernodes for n in sn.nodes)

    @property
    def devices(self) -> int:
        return sum(sn.devices for sn in self.supernodes)

    def link(self, level: str) -> LinkLevel:
        return self.links[level]

    def physical_position(self, hostname: str) -> tuple[int, int]:
        """(super node ordinal, node index) used to sort any hostlist into physical order."""
        node = self._by_host[hostname]
        return (self._sn_ordinal[node.supernode], node.index)

    @property
    def _sn_ordinal(self) -> dict[str, int]:
        cached = self.__dict__.get("_sn_ord")
        if cached is None:
            cached = {sn.name: i for i, sn in enumerate(self.supernodes)}
            object.__setattr__(self, "_sn_ord", cached)
        return cached
