"""Synthetic doctor facts: a site of 2 super nodes x 4 nodes, per-group results chosen by
the test (no torch, no hardware)."""

from __future__ import annotations

from slurm_supernode.bench.groups import RankIdentity, scope_groups
from slurm_supernode.bench.model import BenchRun, GroupResult
from slurm_supernode.doctor.model import DeviceFacts, DoctorFacts, NodeFacts, RankFacts, SmiGpu
from slurm_supernode.health.checks import OK, CheckResult

HOSTS = [f"n{i}" for i in range(8)]
SIZE = 256 << 20


def identities(nproc: int = 2) -> list[RankIdentity]:
    return [
        RankIdentity(rank=h * nproc + lr, host=HOSTS[h], node=f"node{h}", supernode=f"sn{h // 4}")
        for h in range(8)
        for lr in range(nproc)
    ]


def group_results(
    busbw_of,
    nproc: int = 2,
    scopes=("node", "pairs", "pairs_shift", "supernode", "inter"),
    wrong_of=lambda hosts: 0,
    samples_of=None,
) -> tuple[GroupResult, ...]:
    """One result per group of each scope; ``busbw_of(scope, hosts)`` gives its figure, measured
    three times within 1% (the doctor's repeats), unless ``samples_of(scope, hosts)`` gives the
    repeats' figures (its busbw is then their mean; () for a run without repeats)."""
    ids = identities(nproc)
    host = {i.rank: i.host for i in ids}
    out = []
    for scope in scopes:
        for index, ranks in enumerate(scope_groups(ids, scope)):
            hosts = tuple(dict.fromkeys(host[r] for r in ranks))
            if samples_of is None:
                b = busbw_of(scope, hosts)
                samples = (b * 0.99, b, b * 1.01)
            else:
                samples = tuple(samples_of(scope, hosts))
            busbw = sum(samples) / len(samples) if samples else busbw_of(scope, hosts)
            out.append(
                GroupResult(
                    scope=scope,
                    collective="all_reduce",
                    size=SIZE,
                    dtype="bfloat16",
                    group=index,
                    ranks=ranks,
                    time_us=100.0,
                    busbw=busbw,
                    wrong=wrong_of(hosts),
                    samples=samples,
                )
            )
    return tuple(out)


def facts(
    *,
    busbw_of=lambda scope, hosts: 100.0,
    backend="nccl",
    gpus=True,
    nproc=2,
    smi_of=None,
    bus_of=None,
    storage=(),
    wrong_of=lambda hosts: 0,
    samples_of=None,
    tflops_of=lambda host, local_rank: 700.0,
) -> DoctorFacts:
    """Facts of the local site's 8 nodes; GPUs with bus ids 0000:1X:00.0 (X = device)."""
    ranks = []
    for ident in identities(nproc):
        lr = ident.rank % nproc
        dev = None
        if gpus:
            bus = bus_of(ident.host, lr) if bus_of else f"0000:1{lr}:00.0"
            dev = DeviceFacts(
                index=lr,
                name="H200",
                bus_id=bus,
                uuid=f"GPU-{lr}",
                tflops=tflops_of(ident.host, lr),
            )
        ranks.append(RankFacts(ident.rank, lr, ident.host, ident.supernode, "", dev))
    nodes = []
    for h, host in enumerate(HOSTS):
        smi = ()
        if gpus:
            smi = tuple(
                SmiGpu(
                    index=d, bus_id=f"0000:1{d}:00.0", uuid=f"GPU-{d}", name="H200", driver="580.1"
                )
                for d in range(8)
            )
            if smi_of:
                smi = smi_of(host, smi)
        nodes.append(
            NodeFacts(
                host=host,
                supernode=f"sn{h // 4}",
                health=(CheckResult("devices", OK, "8 of 8 devices visible"),),
                smi=smi,
                driver="580.1" if gpus else "",
                torch="2.11",
                cuda="13.0" if gpus else "",
                cuda_devices=8 if gpus else 0,
                storage=storage[h] if storage else (),
            )
        )
    run = BenchRun(
        run_id="r1",
        time=1.0,
        site="local",
        supernode="sn0,sn1",
        nodes=8,
        world_size=8 * nproc,
        backend=backend,
        timing="events",
        group_results=group_results(busbw_of, nproc, wrong_of=wrong_of, samples_of=samples_of),
    )
    return DoctorFacts(
        site="local",
        job_id="42",
        backend=backend,
        nproc_per_node=nproc,
        ranks=tuple(ranks),
        nodes=tuple(nodes),
        bench=run,
        time=1.0,
    )
