"""Benchmark data: what a run asked for, what it measured, and the run as stored.

Pure data shared by the measurement (``collectives``), the history (``store``) and the
report. Bandwidths are in GB/s (10^9 bytes per second) and sizes in bytes, as nccl-tests
prints them, so figures can be compared with ``all_reduce_perf`` output line by line.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")
SCOPES = ("node", "supernode", "inter", "world")
# Node pairs (all ranks of two nodes) inside each super node, two pairings that share no pair:
# a node slow in both is the one at fault (``snrun doctor``'s bisection). Not in "all".
PAIR_SCOPES = ("pairs", "pairs_shift")
DTYPES = ("float32", "bfloat16", "float16")
ELEMENT_SIZE = {"float32": 4, "bfloat16": 2, "float16": 2}
BACKENDS = ("auto", "nccl", "gloo")
TIMINGS = ("auto", "graph", "events", "wall")


@dataclass(frozen=True, slots=True)
class BenchConfig:
    """What to measure; built by the CLI or by a job that calls ``run_benchmark`` directly."""

    sizes: tuple[int, ...]
    collectives: tuple[str, ...] = COLLECTIVES
    scopes: tuple[str, ...] = SCOPES
    dtypes: tuple[str, ...] = ("float32",)
    iters: int = 20
    warmup: int = 5
    backend: str = "auto"  # one of BACKENDS
    timing: str = "auto"  # graph (CUDA graphs) / events (CUDA events) / wall (CPU clock)
    check: bool = True  # verify the content of every result (#wrong)
    supernode_size: int | None = None  # ranks per super node when nothing else says
    site: str = ""
    job_id: str = ""
    # Fault injection for tests of the slow-node search: this rank sleeps this long before
    # every operation (a slow device or link as the other ranks see it). 0 in real use.
    delay_s: float = 0.0
    kind: str = "bench"  # who measured: "bench" or "doctor" (baselines never mix them)
    # The largest size is measured this many times; each group keeps every figure
    # (GroupResult.samples), so the doctor can tell a slow group from the noise.
    repeats: int = 1

    @property
    def params(self) -> str:
        """The settings that change the figures, as stored with the run: a baseline is made
        only of runs with the same ones (20 iterations after 5 warm-ups measure otherwise than
        5 after 1)."""
        return f"iters={self.iters} warmup={self.warmup} check={int(self.check)}"


@dataclass(frozen=True, slots=True)
class BenchResult:
    """One line of the nccl-tests-like table: one collective, size and dtype in one scope.

    ``size`` is the larger of the send and receive buffers of one rank (nccl-tests' size
    column); ``time_us`` the mean time per operation over the participating ranks.
    """

    scope: str
    collective: str
    size: int
    count: int  # elements of the larger buffer
    dtype: str
    group_size: int
    groups: int  # concurrent groups of this scope (one rank per super node: one per index)
    time_us: float
    algbw: float
    busbw: float
    wrong: int  # elements that differ from the expected content, summed over ranks


@dataclass(frozen=True, slots=True)
class GroupResult:
    """One group of a scope on its own (a ``BenchResult`` averages all groups of the scope):
    what finds the one slow node, pair or super node among its peers."""

    scope: str
    collective: str
    size: int
    dtype: str
    group: int  # index among the scope's groups
    ranks: tuple[int, ...]
    time_us: float  # mean over the group's ranks
    busbw: float
    wrong: int
    samples: tuple[float, ...] = ()  # busbw of each repeat (BenchConfig.repeats > 1)


@dataclass(frozen=True, slots=True)
class Versions:
    """Software that bandwidth depends on; stored with each run to explain changes."""

    torch: str = ""
    comm: str = ""  # "nccl 2.28.9", "hccl ...", "gloo"
    driver: str = ""


@dataclass(frozen=True, slots=True)
class BenchRun:
    """A whole run as rank 0 reports and stores it."""

    run_id: str
    time: float  # unix seconds at the start
    site: str
    supernode: str  # super nodes taking part, sorted, comma-separated ("" when unknown)
    nodes: int
    world_size: int
    backend: str
    timing: str
    job_id: str = ""
    hosts: tuple[str, ...] = ()
    versions: Versions = Versions()
    results: tuple[BenchResult, ...] = field(default_factory=tuple)
    group_results: tuple[GroupResult, ...] = field(default_factory=tuple)  # not stored
    kind: str = "bench"  # BenchConfig.kind
    params: str = ""  # BenchConfig.params ("" in runs stored before it was kept)

    @property
    def good(self) -> bool:
        """A run whose every result was verified correct can serve as a baseline."""
        return all(r.wrong == 0 for r in self.results)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["good"] = self.good
        return data

    @classmethod
    def from_dict(cls, data: dict) -> BenchRun:
        return cls(
            run_id=data["run_id"],
            time=float(data["time"]),
            site=data.get("site", ""),
            supernode=data.get("supernode", ""),
            nodes=int(data.get("nodes", 0)),
            world_size=int(data.get("world_size", 0)),
            backend=data.get("backend", ""),
            timing=data.get("timing", ""),
            job_id=data.get("job_id", ""),
            hosts=tuple(data.get("hosts", ())),
            versions=Versions(**data.get("versions", {})),
            results=tuple(BenchResult(**r) for r in data.get("results", ())),
            group_results=tuple(
                GroupResult(
                    **{**g, "ranks": tuple(g["ranks"]), "samples": tuple(g.get("samples", ()))}
                )
                for g in data.get("group_results", ())
            ),
            kind=data.get("kind", "bench"),
            params=data.get("params", ""),
        )
