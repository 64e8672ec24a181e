"""A realistic attempt written through records.append: two super nodes of two nodes, four
devices and two ranks a node, 60 s of samples every 10 s, 40 steps a rank, node sn1-n1 about
1.6x slower than its peers (its ranks' steps and its devices' utilization), one profiled
window, the judge's slow mark. The views' tests read it back through observe/attempt_files."""

from __future__ import annotations

from pathlib import Path

from slurm_supernode.observe import records
from slurm_supernode.observe.records import (
    CommShare,
    DeviceSample,
    NodeSample,
    SlowNodeMark,
    StepRecord,
)

T0 = 1_780_000_000.0
NODES = ("sn0-n0", "sn0-n1", "sn1-n0", "sn1-n1")
SUPERNODE = {n: n.split("-")[0] for n in NODES}
SLOW = "sn1-n1"
RANKS_PER_NODE = 2
GIB = 1 << 30


def rank_node(rank: int) -> str:
    return NODES[rank // RANKS_PER_NODE]


def write_attempt(
    job_dir: Path,
    attempt: int = 0,
    *,
    steps: bool = True,
    comm: bool = True,
    devices: bool = True,
    slow: bool = True,
) -> None:
    for node in NODES:
        lines: list[records.Record] = []
        for i in range(7):  # t0 .. t0+60
            t = T0 + 10 * i
            lines.append(
                NodeSample(
                    t=t,
                    node=node,
                    cpu_percent=35.0 + i,
                    mem_used_bytes=(40 + i) * GIB,
                    mem_total_bytes=512 * GIB,
                    disk_used_bytes=100 * GIB,
                    disk_total_bytes=1000 * GIB,
                    nic_rx_bytes={"ib0": 10_000_000 * i, "eth0": 1000 * i},
                    nic_tx_bytes={"ib0": 20_000_000 * i, "eth0": 500 * i},
                )
            )
            for dev in range(4) if devices else ():
                util = 55.0 if node == SLOW else 97.0
                lines.append(
                    DeviceSample(
                        t=t,
                        node=node,
                        index=dev,
                        util_percent=util,
                        mem_used_bytes=60 * GIB,
                        mem_total_bytes=80 * GIB,
                        temperature_c=60.0 + dev,
                        power_w=400.0 + 10 * dev,
                        sm_clock_mhz=1980.0,
                        ecc_errors=0,
                        xid=None,
                    )
                )
        records.append(records.samples_path(job_dir, attempt, node), lines)
    n_ranks = len(NODES) * RANKS_PER_NODE
    for rank in range(n_ranks) if steps else ():
        node = rank_node(rank)
        secs = 0.8 if node == SLOW else 0.5
        step_lines: list[records.Record] = [
            StepRecord(
                t=T0 + 1 + s * secs,
                rank=rank,
                node=node,
                step=s,
                seconds=secs,
                tokens=4096,
                samples=8,
                loss=3.0 - s / 100,
            )
            for s in range(1, 41)
        ]
        records.append(records.steps_path(job_dir, attempt, rank), step_lines)
    for rank in range(n_ranks) if comm else ():
        records.append(
            records.comm_path(job_dir, attempt, rank),
            [
                CommShare(
                    t=T0 + 30,
                    rank=rank,
                    node=rank_node(rank),
                    steps=5,
                    compute_s=0.35,
                    exposed_comm_s=0.15,
                    overlapped_comm_s=0.05,
                    by_group={"tp": 0.1, "dp": 0.1},
                    plan_share=0.18,
                    trace=f"observe/{attempt}/trace-rank{rank}.json",
                )
            ],
        )
    if slow:
        records.append(
            records.slow_path(job_dir, attempt),
            [
                SlowNodeMark(
                    t=T0 + 45,
                    node=SLOW,
                    supernode="sn1",
                    ratio=1.6,
                    evidence="step time 0.80 s vs 0.50 s median of 3 peers, 40 steps",
                )
            ],
        )
