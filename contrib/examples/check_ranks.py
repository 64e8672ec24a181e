"""Demo/test training script: every rank checks that torchrun put it where `snrun plan` says,
runs a real all-reduce (gloo on CPU, NCCL on GPUs), and rank 0 writes a report.

    snrun -S 2 --nproc-per-node 2 contrib/examples/check_ranks.py [ARGS...]

The report ($SNRUN_JOB_DIR/result.json) lists every rank's host, super node, device and the
arguments it received, so tests can check them and the demo can print them.
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from slurm_supernode.fsutil import write_json_atomic
from slurm_supernode.jobenv import JobEnvironment
from slurm_supernode.launch.inputs import load_inputs, rank_map_for_job
from slurm_supernode.site.loader import load_site


def main() -> int:
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend, timeout=timedelta(seconds=120))
    rank, world = dist.get_rank(), dist.get_world_size()
    job_env = JobEnvironment.from_environ()
    local_rank = job_env.local_rank or 0
    host = job_env.hostname()

    job_dir = Path(os.environ["SNRUN_JOB_DIR"])
    inputs = load_inputs(job_dir)
    site = load_site(inputs.site_file)
    rank_map = rank_map_for_job(inputs, site, job_env.hosts())
    expect = rank_map.ranks[rank]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") or os.environ.get("ASCEND_RT_VISIBLE_DEVICES")
    device = int(visible.split(",")[local_rank]) if visible else None
    problems = []
    if world != rank_map.world_size:
        problems.append(f"world size {world} != plan {rank_map.world_size}")
    if expect.hostname != host:
        problems.append(f"rank {rank} on {host}, plan says {expect.hostname}")
    if expect.local_rank != local_rank:
        problems.append(f"local rank {local_rank} != plan {expect.local_rank}")
    if device is not None and device != expect.device:
        problems.append(f"device {device} != plan {expect.device}")

    pci_bus = None
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        props = torch.cuda.get_device_properties(local_rank)
        pci_bus = f"{props.pci_domain_id:08x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}"
    t = torch.full((4,), float(rank + 1), device="cuda" if backend == "nccl" else "cpu")
    dist.all_reduce(t)
    want = world * (world + 1) / 2
    if not torch.allclose(t.cpu(), torch.full((4,), want)):
        problems.append(f"all_reduce gave {t.tolist()}, want {want}")

    mine = {
        "rank": rank,
        "local_rank": local_rank,
        "host": host,
        "supernode": os.environ.get("SNRUN_SUPERNODE"),
        "device": device,
        "pci_bus": pci_bus,
        "coords": expect.coords,
        "argv": sys.argv[1:],
        "attempt": int(os.environ.get("SNRUN_ATTEMPT", "0")),
        "problems": problems,
    }
    everyone: list[dict | None] = [None] * world
    dist.all_gather_object(everyone, mine)
    if rank == 0:
        report = {
            "world_size": world,
            "backend": backend,
            "all_reduce": t[0].item(),
            "ranks": everyone,
            "ok": all(not r["problems"] for r in everyone if r),
        }
        write_json_atomic(job_dir / "result.json", report)
        by_node: dict[str, list[int]] = {}
        for r in everyone:
            if r:
                by_node.setdefault(f"{r['supernode']}/{r['host']}", []).append(r["rank"])
        print(f"world size {world} ({backend}); all_reduce sum {t[0].item():.0f} (want {want:.0f})")
        for where, ranks in sorted(by_node.items()):
            print(f"  {where:<12} ranks {ranks}")
        print("placement matches snrun plan" if report["ok"] else "PLACEMENT MISMATCH")
    dist.destroy_process_group()
    return 0 if not problems else 3


if __name__ == "__main__":
    sys.exit(main())
