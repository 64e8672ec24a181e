"""Doctor data: what each node and rank reported (facts) and what the doctor concluded.

Facts are gathered inside the allocation (``inside.py``) and written as JSON; the verdicts
(``steps.py``) are pure functions of the facts and the site, so a stored facts file can be
judged again (``snrun doctor --facts FILE``) and every rule is testable without hardware.
Verdicts use ``snrun health``'s Nagios codes: ok 0, warn 1, fail 2, unknown 3.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from slurm_supernode.bench.model import BenchRun
from slurm_supernode.health.checks import (
    CRITICAL,
    OK,
    UNKNOWN,
    WARNING,
    CheckResult,
    overall_status,
)

# The field notes' order: each step only after the one before it passes.
STEPS = ("device", "intra", "cross", "bandwidth", "topology", "storage")
STEP_TITLES = {
    "device": "1. device baseline",
    "intra": "2. intra-node communication",
    "cross": "3. cross-node communication",
    "bandwidth": "4. bandwidth vs spec",
    "topology": "5. topology mapping",
    "storage": "6. storage",
}
SKIP = -1  # not applicable here (one node, no NVLink fabric...): counts as ok for the exit code
VERDICTS = {OK: "ok", WARNING: "warn", CRITICAL: "fail", UNKNOWN: "unknown", SKIP: "n/a"}


@dataclass(frozen=True, slots=True)
class Finding:
    """One line of the checklist: what was measured, what the site expects, the verdict
    (a Nagios code) and what to check next when it is not ok."""

    step: str  # one of STEPS
    check: str
    status: int
    measured: str
    expected: str = ""
    next: str = ""
    where: str = ""  # the node, pair, super node or path it is about ("" : all)

    @property
    def verdict(self) -> str:
        return VERDICTS[self.status]

    def to_dict(self) -> dict:
        return {**asdict(self), "verdict": self.verdict}


@dataclass(frozen=True, slots=True)
class DeviceFacts:
    """One rank's device as torch sees it, and its small compute check."""

    index: int  # CUDA ordinal inside the rank's CUDA_VISIBLE_DEVICES
    name: str = ""
    bus_id: str = ""  # normalised: "0000:18:00.0"
    uuid: str = ""
    tflops: float | None = None  # bf16 matmul
    error: str = ""


@dataclass(frozen=True, slots=True)
class RankFacts:
    rank: int
    local_rank: int
    host: str
    supernode: str
    visible: str  # CUDA_VISIBLE_DEVICES / ASCEND_RT_VISIBLE_DEVICES as the rank got it
    device: DeviceFacts | None  # None: no GPU for this rank


@dataclass(frozen=True, slots=True)
class SmiGpu:
    """One row of ``nvidia-smi --query-gpu`` (index = nvidia-smi's, PCI bus order)."""

    index: int
    bus_id: str
    uuid: str
    name: str
    driver: str
    sm_clock: int | None = None
    max_sm_clock: int | None = None
    fabric_state: str = ""  # nvidia-smi -q Fabric: "Completed", "N/A", ...
    cluster_uuid: str = ""  # NVLink fabric ClusterUUID ("" where not shown)


@dataclass(frozen=True, slots=True)
class StorageFacts:
    path: str
    free_bytes: int | None
    write_mbps: float | None
    read_mbps: float | None
    error: str = ""


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """What the first rank of a node read about the node."""

    host: str
    supernode: str
    health: tuple[CheckResult, ...] = ()  # snrun health's device/vendor/imex checks
    smi: tuple[SmiGpu, ...] = ()  # empty: no nvidia-smi
    smi_error: str = ""
    driver: str = ""  # /proc/driver/nvidia/version
    torch: str = ""
    cuda: str = ""  # torch's CUDA runtime
    cuda_devices: int = 0  # what torch sees on this node (inside CUDA_VISIBLE_DEVICES)
    device_ips: tuple[str, ...] | None = None  # Ascend: read from the hardware (None: not read)
    device_ip_note: str = ""  # why (some) device IPs could not be read
    storage: tuple[StorageFacts, ...] = ()


@dataclass(frozen=True)
class DoctorFacts:
    """Everything one in-allocation run gathered: rank 0 writes it as JSON."""

    site: str
    job_id: str
    backend: str
    nproc_per_node: int
    ranks: tuple[RankFacts, ...]
    nodes: tuple[NodeFacts, ...]
    bench: BenchRun | None = None
    time: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["bench"] = self.bench.to_dict() if self.bench else None
        return data

    @classmethod
    def from_dict(cls, data: dict) -> DoctorFacts:
        def rank(r: dict) -> RankFacts:
            dev = r.get("device")
            return RankFacts(**{**r, "device": DeviceFacts(**dev) if dev else None})

        def node(n: dict) -> NodeFacts:
            ips = n.get("device_ips")
            return NodeFacts(
                **{
                    **n,
                    "health": tuple(CheckResult(**c) for c in n.get("health", ())),
                    "smi": tuple(SmiGpu(**g) for g in n.get("smi", ())),
                    "storage": tuple(StorageFacts(**s) for s in n.get("storage", ())),
                    "device_ips": None if ips is None else tuple(ips),
                }
            )

        return cls(
            site=data.get("site", ""),
            job_id=str(data.get("job_id", "")),
            backend=data.get("backend", ""),
            nproc_per_node=int(data.get("nproc_per_node", 0)),
            ranks=tuple(rank(r) for r in data.get("ranks", ())),
            nodes=tuple(node(n) for n in data.get("nodes", ())),
            bench=BenchRun.from_dict(data["bench"]) if data.get("bench") else None,
            time=float(data.get("time", 0.0)),
            notes=tuple(data.get("notes", ())),
        )


@dataclass(frozen=True)
class DoctorReport:
    """The checklist's answer: findings in step order, the worst verdict wins."""

    site: str
    job_id: str
    hosts: tuple[str, ...]
    findings: tuple[Finding, ...]
    time: float = 0.0

    @property
    def status(self) -> int:
        return overall_status(self.findings)

    def step_status(self, step: str) -> int:
        return overall_status([f for f in self.findings if f.step == step])

    def to_dict(self) -> dict:
        return {
            "site": self.site,
            "job_id": self.job_id,
            "hosts": list(self.hosts),
            "time": self.time,
            "status": self.status,
            "verdict": VERDICTS[self.status],
            "steps": [
                {
                    "step": step,
                    "title": STEP_TITLES[step],
                    "status": self.step_status(step),
                    "verdict": VERDICTS[self.step_status(step)],
                    "findings": [f.to_dict() for f in self.findings if f.step == step],
                }
                for step in STEPS
            ],
        }
