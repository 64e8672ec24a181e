"""The doctor's in-allocation part: one process per device under torchrun (started by the
snrun agent, like ``snrun bench run``).

Every rank reads its device (and runs the compute check); the first rank of each node reads
the node (``snrun health``'s checks, nvidia-smi, storage); then all ranks run the bench's
all-reduce over the node, node-pair, super-node and inter scopes with per-group results.
Rank 0 writes the facts as JSON and appends the bench run to the results database.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from slurm_supernode.bench.model import BenchConfig, BenchRun
from slurm_supernode.doctor import probe
from slurm_supernode.doctor.model import DoctorFacts, NodeFacts, RankFacts
from slurm_supernode.errors import InputError
from slurm_supernode.fsutil import write_json_atomic
from slurm_supernode.site.model import Site

SCOPES = ("node", "pairs", "pairs_shift", "supernode", "inter")
SLOW_NODE_ENV = "SNRUN_DOCTOR_SLOW_NODE"  # fault injection: HOST:SECONDS per operation


@dataclass(frozen=True)
class InsideOptions:
    out: str  # facts JSON (rank 0 writes it)
    db: str | None = None  # results database the bench run is appended to
    backend: str = "auto"
    size: int | None = None  # largest all-reduce (default: site doctor.size; gloo 1 MiB)
    iters: int | None = None
    storage_paths: tuple[str, ...] = ()
    job_id: str = ""


# The judged size is measured this often: a group is slow only when it is slow in every
# repeat and by more than the spread of the repeats (doctor/noise.py).
REPEATS = 3


def injected_delay(env: Mapping[str, str], host: str) -> float:
    """Seconds this host's ranks sleep per operation (``SNRUN_DOCTOR_SLOW_NODE=n5:0.05``)."""
    spec = env.get(SLOW_NODE_ENV, "")
    if not spec:
        return 0.0
    name, _, seconds = spec.rpartition(":")
    try:
        delay = float(seconds)
    except ValueError:
        raise InputError(f"bad value {spec!r}", where=SLOW_NODE_ENV, hint="HOST:SECONDS") from None
    return delay if name == host else 0.0


def node_facts(
    site: Site, host: str, supernode: str, cuda_devices: int, opts: InsideOptions, storage_mb: int
) -> NodeFacts:
    """What the first rank of a node reads about it (snrun health's checks reused)."""
    import torch

    from slurm_supernode.health import checks
    from slurm_supernode.health.probe import (
        HealthOptions,
        device_check,
        imex_channels,
        vendor_checks,
    )

    health = [device_check(site, HealthOptions(node=host)), *vendor_checks(site)]
    if site.imex_channels:
        health.append(checks.check_imex(imex_channels()))
    smi, smi_error = probe.read_smi() if site.vendor == "nvidia" else ((), "")
    ips, ip_note = probe.read_device_ips(site, host) if site.vendor == "ascend" else (None, "")
    return NodeFacts(
        host=host,
        supernode=supernode,
        health=tuple(health),
        smi=smi,
        smi_error=smi_error,
        driver=probe.driver_version(),
        torch=torch.__version__,
        cuda=torch.version.cuda or "",
        cuda_devices=cuda_devices,
        device_ips=ips,
        device_ip_note=ip_note,
        storage=tuple(probe.storage_test(p, storage_mb) for p in opts.storage_paths),
    )


def run_inside(site: Site, opts: InsideOptions, env: Mapping[str, str] | None = None) -> int:
    """Gather, measure, write (rank 0). Every rank calls it; returns 0."""
    import torch
    import torch.distributed as dist

    from slurm_supernode.bench.collectives import resolve_backend, run_benchmark

    env = os.environ if env is None else env
    backend = resolve_backend(opts.backend)
    from slurm_supernode.jobenv import JobEnvironment

    job_env = JobEnvironment.from_environ(env)
    local_rank = job_env.local_rank or 0
    host = job_env.hostname()
    supernode = env.get("SNRUN_SUPERNODE", "")
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    else:
        dist.init_process_group(backend)
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        cuda = torch.cuda.device_count() if torch.cuda.is_available() else 0
        device = probe.device_facts(local_rank) if backend == "nccl" else None
        visible = env.get("CUDA_VISIBLE_DEVICES") or env.get("ASCEND_RT_VISIBLE_DEVICES") or ""
        me = RankFacts(rank, local_rank, host, supernode, visible, device)
        mine = None
        if local_rank == 0:
            mine = node_facts(site, host, supernode, cuda, opts, site.doctor.storage_mb)
        gathered: list[RankFacts | None] = [None] * world
        nodes: list[NodeFacts | None] = [None] * world
        dist.all_gather_object(gathered, me)
        dist.all_gather_object(nodes, mine)
        ranks = cast("list[RankFacts]", gathered)  # all_gather_object filled every rank's
        run = run_benchmark(_bench_config(site, opts, backend, injected_delay(env, host)), env)
        if rank != 0:
            return 0
        _write_facts(site, opts, backend, host, ranks, nodes, run)
        return 0
    finally:
        dist.destroy_process_group()


def _bench_config(site: Site, opts: InsideOptions, backend: str, delay_s: float) -> BenchConfig:
    """The all-reduce per group scope: a small size and the site's (bfloat16 on GPUs)."""
    size = opts.size or (site.doctor.size if backend == "nccl" else 1 << 20)
    return BenchConfig(
        sizes=tuple(sorted({min(1 << 20, size), size})),
        collectives=("all_reduce",),
        scopes=SCOPES,
        dtypes=("bfloat16",) if backend == "nccl" else ("float32",),
        iters=opts.iters or (20 if backend == "nccl" else 5),
        warmup=5 if backend == "nccl" else 1,
        backend=backend,
        site=site.name,
        job_id=opts.job_id,
        delay_s=delay_s,
        kind="doctor",
        repeats=REPEATS,
    )


def _write_facts(
    site: Site,
    opts: InsideOptions,
    backend: str,
    host: str,
    ranks: list[RankFacts],
    nodes: list[NodeFacts | None],
    run: BenchRun | None,
) -> None:
    """Rank 0: every rank's and node's facts with the run, as JSON (and the run into the
    bench database when asked)."""
    nproc = sum(1 for r in ranks if r.host == host)
    facts = DoctorFacts(
        site=site.name,
        job_id=opts.job_id,
        backend=backend,
        nproc_per_node=nproc,
        ranks=tuple(sorted(ranks, key=lambda r: r.rank)),
        nodes=tuple(n for n in nodes if n is not None),
        bench=run,
        time=time.time(),
    )
    write_json_atomic(opts.out, facts.to_dict())
    if opts.db and run is not None:
        from slurm_supernode.bench.store import open_store

        with open_store(opts.db) as store:
            store.add_run(run)
