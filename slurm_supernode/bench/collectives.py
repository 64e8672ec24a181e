"""The measurement: collectives over torch.distributed, timed and verified like nccl-tests.

Only this module imports torch, and only inside functions, so the CLI and the report stay
light on a login node. One process per device (torchrun's environment: RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT). ``run_benchmark`` is the entry point a job calls.

Definitions (nccl-tests, doc/PERFORMANCE.md): ``size`` is the larger buffer of one rank
(the gathered buffer of all_gather, the input of reduce_scatter); algbw = size / time;
busbw = algbw x factor, with factor 2(n-1)/n for all_reduce, (n-1)/n for all_gather,
reduce_scatter and all_to_all, 1 for broadcast. Every result is checked: inputs are small
integers that depend on rank and index, so every reduction is exact in every dtype and the
output must equal the expected values element by element (#wrong counts those that differ).

Timing: on GPUs ``events`` times a loop with CUDA events while a spin kernel holds the GPU
until the whole loop is queued, and ``graph`` captures ``iters`` operations in one CUDA graph
and times a replay: both keep Python's launch overhead out of small-message figures. On CPUs
(gloo) ``wall`` uses the wall clock.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from slurm_supernode.bench.groups import (
    RankIdentity,
    describe_placement,
    group_of,
    rank_identity,
    scope_groups,
)
from slurm_supernode.bench.model import (
    ELEMENT_SIZE,
    BenchConfig,
    BenchResult,
    BenchRun,
    GroupResult,
    Versions,
)
from slurm_supernode.errors import InputError
from slurm_supernode.jobenv import JobEnvironment

if TYPE_CHECKING:  # torch only inside functions at run time (module docstring)
    import torch

REDUCING = ("all_reduce", "reduce_scatter")
CHUNKED = ("all_gather", "reduce_scatter", "all_to_all")  # size split into n equal chunks
# Largest integer a dtype holds exactly: sums of rank contributions must stay below it.
EXACT_LIMIT = {"float32": 1 << 24, "bfloat16": 1 << 8, "float16": 1 << 11}
_FILL_CHUNK = 1 << 26  # elements per step when filling/verifying, to bound temporary memory


# -- pure arithmetic (no torch) -----------------------------------------------------------
def busbw_factor(collective: str, n: int) -> float:
    """nccl-tests' bus bandwidth factor for ``n`` ranks."""
    if n < 1:
        raise ValueError(f"group size {n} < 1")
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    if collective in CHUNKED:
        return (n - 1) / n
    if collective == "broadcast":
        return 1.0
    raise ValueError(f"unknown collective {collective!r}")


def bandwidths(collective: str, size: int, seconds: float, n: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s for ``size`` bytes moved in ``seconds`` by ``n`` ranks."""
    algbw = size / seconds / 1e9 if seconds > 0 else 0.0
    return algbw, algbw * busbw_factor(collective, n)


def element_count(collective: str, size: int, dtype: str, n: int) -> int:
    """Elements of the larger buffer: floored so that chunked collectives split evenly."""
    count = size // ELEMENT_SIZE[dtype]
    return count // n * n if collective in CHUNKED else count


def redop(collective: str) -> str:
    return "sum" if collective in REDUCING else "none"


# -- buffers and verification (torch) ------------------------------------------------------
def _contributors(n: int, dtype: str) -> int:
    """Ranks whose values enter a reduction, so that the sum stays exact (see below)."""
    return min(n, (EXACT_LIMIT[dtype] - 4) // 2 + 1)


# Reductions: rank 0 contributes idx % 5 (<= 4), rank r > 0 contributes (idx + r) % 3 (<= 2),
# ranks past ``_contributors`` zero. Different periods keep the sum varying along the buffer
# (so a misrouted chunk shows) whatever n is; power-of-two chunks are never multiples of 3 or 5.
def _reduce_input(idx, r: int, n: int, dtype: str):
    if r == 0:
        return idx % 5
    return (idx + r) % 3 if r < _contributors(n, dtype) else idx * 0


def _reduce_sum(idx, n: int, dtype: str):
    """The sum of ``_reduce_input`` over all ranks, in closed form (3 per 3 ranks r > 0)."""
    others = _contributors(n, dtype) - 1
    full, rest = divmod(others, 3)
    total = idx % 5 + 3 * full
    for r in range(1, rest + 1):
        total = total + (idx + r) % 3
    return total


def input_values(collective: str, idx, r: int, n: int, chunk: int, dtype: str):
    """Input of group rank ``r`` at input indices ``idx`` (int64 tensor)."""
    if collective == "all_reduce" or collective == "reduce_scatter":
        return _reduce_input(idx, r, n, dtype)
    if collective == "all_gather":
        return (idx + r) % 7
    if collective == "all_to_all":  # chunk j goes to rank j
        return (idx % chunk + r + 2 * (idx // chunk)) % 7
    if collective == "broadcast":
        return idx % 7 + 1 if r == 0 else idx * 0
    raise ValueError(collective)


def expected_values(collective: str, idx, r: int, n: int, chunk: int, dtype: str):
    """What group rank ``r`` must hold at output indices ``idx`` afterwards."""
    if collective == "all_reduce":
        return _reduce_sum(idx, n, dtype)
    if collective == "reduce_scatter":
        return _reduce_sum(idx + r * chunk, n, dtype)
    if collective == "all_gather":  # chunk j came from rank j
        return (idx % chunk + idx // chunk) % 7
    if collective == "all_to_all":  # chunk j came from rank j, which sent its chunk r
        return (idx % chunk + idx // chunk + 2 * r) % 7
    if collective == "broadcast":
        return idx % 7 + 1
    raise ValueError(collective)


def _torch_dtype(dtype: str):
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]


def make_buffers(collective: str, count: int, r: int, n: int, dtype: str, device):
    """(input, output) of one rank; all_reduce and broadcast work in place (same tensor)."""
    import torch

    chunk = count // n if collective in CHUNKED else count
    in_numel = chunk if collective == "all_gather" else count
    out_numel = chunk if collective == "reduce_scatter" else count
    tdt = _torch_dtype(dtype)
    inp = torch.empty(in_numel, dtype=tdt, device=device)
    for start in range(0, in_numel, _FILL_CHUNK):
        stop = min(in_numel, start + _FILL_CHUNK)
        idx = torch.arange(start, stop, dtype=torch.int64, device=device)
        inp[start:stop] = input_values(collective, idx, r, n, chunk, dtype).to(tdt)
    if collective in ("all_reduce", "broadcast"):
        return inp, inp
    out = torch.full((out_numel,), -1, dtype=tdt, device=device)
    return inp, out


def count_wrong(collective: str, out, r: int, n: int, count: int, dtype: str) -> int:
    """Elements of ``out`` that differ from what group rank ``r`` must hold."""
    import torch

    chunk = count // n if collective in CHUNKED else count
    wrong = 0
    for start in range(0, out.numel(), _FILL_CHUNK):
        stop = min(out.numel(), start + _FILL_CHUNK)
        idx = torch.arange(start, stop, dtype=torch.int64, device=out.device)
        expected = expected_values(collective, idx, r, n, chunk, dtype).to(out.dtype)
        wrong += int((out[start:stop] != expected).sum().item())
    return wrong


def collective_op(collective: str, inp, out, group, root: int) -> Callable[[], None]:
    """A no-argument call running the collective once (``group`` None: the world)."""
    import torch.distributed as dist

    if collective == "all_reduce":
        return lambda: dist.all_reduce(inp, group=group)
    if collective == "all_gather":  # renamed *_single in torch 2.13; older names before
        gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        return lambda: gather(out, inp, group=group)
    if collective == "reduce_scatter":
        scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        return lambda: scatter(out, inp, group=group)
    if collective == "all_to_all":
        return lambda: dist.all_to_all_single(out, inp, group=group)
    if collective == "broadcast":
        return lambda: dist.broadcast(inp, src=root, group=group)
    raise ValueError(collective)


# -- timing -------------------------------------------------------------------------------
def _sync_group(group, device) -> None:
    """Line the group's ranks up before a timing (a tiny all-reduce, then device sync)."""
    import torch
    import torch.distributed as dist

    if device.type == "cuda":
        dist.all_reduce(torch.zeros(1, device=device), group=group)
        torch.cuda.synchronize(device)
    else:
        dist.barrier(group=group)


def time_op(op: Callable[[], None], *, iters: int, warmup: int, timing: str, group, device):
    """Seconds per operation. ``timing``: graph, events or wall (see the module doc)."""
    import torch

    for _ in range(warmup):
        op()
    if timing == "wall":
        _sync_group(group, device)
        start = time.perf_counter()
        for _ in range(iters):
            op()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return (time.perf_counter() - start) / iters
    begin = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    graph = None
    if timing == "graph":
        graph = torch.cuda.CUDAGraph()
        torch.cuda.synchronize(device)
        try:
            with torch.cuda.graph(graph):
                for _ in range(iters):
                    op()
        except RuntimeError as exc:  # a backend that cannot be captured: time a plain loop
            print(f"snrun bench: CUDA graph capture failed ({exc}); timing with events",
                  file=sys.stderr)  # fmt: skip
            graph = None
    if graph is not None:
        graph.replay()  # first replay uploads the graph
        _sync_group(group, device)
        begin.record()
        graph.replay()
        end.record()
    else:
        return _time_events(op, iters, group, device)
    end.synchronize()
    return begin.elapsed_time(end) / 1e3 / iters


def _time_events(op: Callable[[], None], iters: int, group, device) -> float:
    """A loop timed by CUDA events, the GPU held back by a spin kernel meanwhile.

    Python needs ~20-30 us to issue one collective, longer than a small NCCL operation, so a
    plain loop measures the CPU. ``torch.cuda._sleep`` keeps the stream busy until the whole
    loop is queued; the begin event fires only then and the operations run back to back, as
    nccl-tests' C loop does. If the spin ended before the loop was queued (the begin event
    has already fired), the spin is doubled and the timing repeated.
    """
    import torch
    import torch.distributed as dist

    sleep = getattr(torch.cuda, "_sleep", None)
    cycles = iters * 150_000  # ~75 us of GPU clock per queued operation at ~2 GHz
    for _ in range(4):
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        _sync_group(group, device)
        if sleep is not None:
            sleep(cycles)
        begin.record()
        for _ in range(iters):
            op()
        end.record()
        queued_in_time = sleep is not None and not begin.query()
        end.synchronize()
        # every rank must take the same decision, or the next timing's collectives mismatch
        flag = torch.tensor([0 if queued_in_time else 1], device=device)
        dist.all_reduce(flag, group=group)
        if sleep is None or int(flag.item()) == 0:
            break
        cycles *= 4
    return begin.elapsed_time(end) / 1e3 / iters


# -- the run -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Sample:
    """One rank's measurement of one (scope, collective, dtype, requested size)."""

    scope: str
    collective: str
    dtype: str
    requested: int
    size: int
    count: int
    n: int
    groups: int
    seconds: float
    wrong: int
    group: int = 0  # index of the rank's group in the scope
    rank: int = 0
    repeats: tuple[float, ...] = ()  # seconds of each repeat (BenchConfig.repeats > 1)


def _versions(backend: str) -> Versions:
    import torch

    comm = backend
    if backend == "nccl":
        try:
            comm = "nccl " + ".".join(str(v) for v in torch.cuda.nccl.version())
        except Exception:  # version query is informative only
            comm = "nccl"
    driver = ""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8") as fh:
            words = fh.readline().split()
        # "... Kernel Module  580.159.04 ..." or "... Open Kernel Module for x86_64  580.159.04"
        after = words[words.index("Module") + 1 :] if "Module" in words else []
        driver = next((w for w in after if w[:1].isdigit() and "." in w), "")
    except OSError:
        pass
    if torch.version.cuda:
        driver = f"{driver} cuda {torch.version.cuda}".strip()
    return Versions(torch=torch.__version__, comm=comm, driver=driver)


def aggregate(samples: Sequence[_Sample]) -> list[BenchResult]:
    """Rows of the table from all ranks' samples: mean time (nccl-tests' default), summed
    #wrong; bandwidth from the mean time when all groups are alike, else the mean per rank."""
    rows: dict[tuple, list[_Sample]] = {}
    for s in samples:
        rows.setdefault((s.scope, s.collective, s.dtype, s.requested), []).append(s)
    results = []
    for (scope, coll, dtype, _), group in rows.items():
        seconds = sum(s.seconds for s in group) / len(group)
        size = max(s.size for s in group)
        n = max(s.n for s in group)
        if all(s.size == size and s.n == n for s in group):
            algbw, busbw = bandwidths(coll, size, seconds, n)
        else:
            per_rank = [bandwidths(coll, s.size, s.seconds, s.n) for s in group]
            algbw = sum(a for a, _ in per_rank) / len(per_rank)
            busbw = sum(b for _, b in per_rank) / len(per_rank)
        results.append(
            BenchResult(
                scope=scope,
                collective=coll,
                size=size,
                count=max(s.count for s in group),
                dtype=dtype,
                group_size=n,
                groups=group[0].groups,
                time_us=seconds * 1e6,
                algbw=algbw,
                busbw=busbw,
                wrong=sum(s.wrong for s in group),
            )
        )
    return results


def group_results(samples: Sequence[_Sample]) -> list[GroupResult]:
    """Each group of each scope on its own: mean time of its ranks, summed #wrong."""
    rows: dict[tuple, list[_Sample]] = {}
    for s in samples:
        rows.setdefault((s.scope, s.collective, s.dtype, s.requested, s.group), []).append(s)
    out = []
    for (scope, coll, dtype, _, group), part in rows.items():
        seconds = sum(s.seconds for s in part) / len(part)
        _, busbw = bandwidths(coll, part[0].size, seconds, part[0].n)
        # repeat k of the group: its ranks' mean time in their k-th measurement
        counts = {len(s.repeats) for s in part}
        repeat_bw: tuple[float, ...] = ()
        if len(counts) == 1 and (k := counts.pop()) > 1:
            repeat_bw = tuple(
                bandwidths(coll, part[0].size, sum(s.repeats[i] for s in part) / len(part),
                           part[0].n)[1]
                for i in range(k)
            )  # fmt: skip
        out.append(
            GroupResult(
                scope=scope,
                collective=coll,
                size=part[0].size,
                dtype=dtype,
                group=group,
                ranks=tuple(sorted(s.rank for s in part)),
                time_us=seconds * 1e6,
                busbw=busbw,
                wrong=sum(s.wrong for s in part),
                samples=repeat_bw,
            )
        )
    return out


class _Progress:
    """Rank 0's progress: a rich bar on a terminal, plain lines otherwise, nothing elsewhere."""

    def __init__(self, total: int, enabled: bool, stream=sys.stderr):
        self.total, self.done, self.stream, self.bar = total, 0, stream, None
        self.enabled = enabled
        if enabled and stream.isatty():
            try:
                from rich.progress import Progress

                self.bar = Progress(transient=True)
                self.bar.start()
                self.task = self.bar.add_task("bench", total=total)
            except ImportError:
                self.bar = None

    def step(self, label: str, last_of_block: bool) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=label)
        elif self.enabled and last_of_block:
            print(f"bench: {label} done ({self.done}/{self.total})", file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def resolve_backend(backend: str) -> str:
    import torch

    if backend == "auto":
        return "nccl" if torch.cuda.is_available() else "gloo"
    return backend


def resolve_timing(timing: str, backend: str) -> str:
    if timing == "auto":
        return "events" if backend == "nccl" else "wall"
    if timing in ("graph", "events") and backend != "nccl":
        raise InputError(f"{timing} timing needs GPUs (nccl)", where="--timing", hint="wall")
    return timing


def run_benchmark(config: BenchConfig, env: Mapping[str, str] | None = None) -> BenchRun | None:
    """Measure every (scope, collective, dtype, size) of ``config``; rank 0 gets the run.

    Initializes torch.distributed from the torchrun variables unless a job already did
    (then the caller's process group is used and kept). Every rank must call this.
    """
    import torch
    import torch.distributed as dist

    env = os.environ if env is None else env
    backend = resolve_backend(config.backend)
    timing = resolve_timing(config.timing, backend)
    local_rank = JobEnvironment.from_environ(env).local_rank or 0
    if backend == "nccl":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    owns_group = not dist.is_initialized()
    if owns_group:
        kwargs: dict[str, Any] = {"device_id": device} if backend == "nccl" else {}
        dist.init_process_group(backend=backend, **kwargs)
    try:
        return _run(config, env, backend, timing, device)
    finally:
        if owns_group:
            dist.destroy_process_group()


def _run(
    config: BenchConfig, env: Mapping[str, str], backend: str, timing: str, device: torch.device
) -> BenchRun | None:
    import torch.distributed as dist

    rank, world = dist.get_rank(), dist.get_world_size()
    started = time.time()
    me = rank_identity({**env, "RANK": str(rank)}, supernode_size=config.supernode_size)
    gathered_ids: list[RankIdentity | None] = [None] * world
    dist.all_gather_object(gathered_ids, me)
    ids = cast("list[RankIdentity]", gathered_ids)  # all_gather_object filled every rank's
    samples = _measure_scopes(config, ids, rank, timing, device)
    gathered: list[list[_Sample] | None] = [None] * world
    dist.all_gather_object(gathered, samples)
    if rank != 0:
        return None
    supernode, nodes, hosts = describe_placement(ids)
    flat = [s for part in gathered for s in (part or [])]
    return BenchRun(
        run_id=uuid.uuid4().hex,
        time=started,
        site=config.site,
        supernode=supernode,
        nodes=nodes,
        world_size=world,
        backend=backend,
        timing=timing,
        job_id=config.job_id,
        hosts=hosts,
        versions=_versions(backend),
        results=tuple(aggregate(flat)),
        group_results=tuple(group_results(flat)),
        kind=config.kind,
        params=config.params,
    )


def _measure_scopes(
    config: BenchConfig,
    ids: Sequence[RankIdentity],
    rank: int,
    timing: str,
    device: torch.device,
) -> list[_Sample]:
    """This rank's samples of every (scope, collective, dtype, size); every rank runs every
    block (a rank outside the scope's groups only keeps the progress count)."""
    import torch.distributed as dist

    plans = {s: scope_groups(ids, s) for s in config.scopes}
    blocks = [
        (scope, coll, dtype)
        for scope in config.scopes
        if plans[scope]
        for dtype in config.dtypes
        for coll in config.collectives
    ]
    progress = _Progress(len(blocks) * len(config.sizes), enabled=rank == 0)
    samples: list[_Sample] = []
    try:
        for scope in config.scopes:
            groups = plans[scope]
            if not groups:  # the scope does not apply (same answer on every rank)
                continue
            handles = [None if scope == "world" else dist.new_group(list(g)) for g in groups]
            index = group_of(groups, rank)
            for dtype in config.dtypes:
                for coll in config.collectives:
                    for i, size in enumerate(config.sizes):
                        last = i == len(config.sizes) - 1
                        label = f"{scope} {coll} {dtype}"
                        if index is not None:
                            sample = _measure(
                                config, scope, coll, dtype, size, groups, index, handles, rank,
                                timing, device,
                            )  # fmt: skip
                            if sample is not None:
                                samples.append(sample)
                        progress.step(label, last)
    finally:
        progress.close()
    return samples


def _measure(config, scope, coll, dtype, size, groups, index, handles, rank, timing, device):
    group_ranks = groups[index]
    n = len(group_ranks)
    r = group_ranks.index(rank)
    count = element_count(coll, size, dtype, n)
    if count == 0:
        return None
    inp, out = make_buffers(coll, count, r, n, dtype, device)
    op = collective_op(coll, inp, out, handles[index], root=group_ranks[0])
    if config.delay_s > 0:
        op = _delayed(op, config.delay_s)
    wrong = 0
    if config.check:
        op()
        wrong = count_wrong(coll, out, r, n, count, dtype)
    repeats = config.repeats if size == max(config.sizes) else 1
    times = tuple(
        time_op(
            op,
            iters=config.iters,
            warmup=config.warmup,
            timing=timing,
            group=handles[index],
            device=device,
        )
        for _ in range(max(1, repeats))
    )
    seconds = sum(times) / len(times)
    return _Sample(
        scope=scope,
        collective=coll,
        dtype=dtype,
        requested=size,
        size=count * ELEMENT_SIZE[dtype],
        count=count,
        n=n,
        groups=len(groups),
        seconds=seconds,
        wrong=wrong,
        group=index,
        rank=rank,
        repeats=times if len(times) > 1 else (),
    )


def _delayed(op: Callable[[], None], seconds: float) -> Callable[[], None]:
    """``op`` after a sleep: ``BenchConfig.delay_s``'s injected slowness."""

    def slow() -> None:
        time.sleep(seconds)
        op()

    return slow
