"""Demo/test training script: form the parallel groups the way a Megatron training script does
and check that every group runs where `snrun plan` says.

    snrun -S 2 --nproc-per-node 2 --tp 2 --ep 4 contrib/examples/megatron_groups.py \\
          --tensor-model-parallel-size 2 --expert-model-parallel-size 4

The groups come from rank numbers and the Megatron sizes alone (``rank_groups`` below follows
Megatron-Core's documented RankGenerator rule; nothing here asks snrun which ranks belong
together). Every rank creates every group with ``torch.distributed.new_group`` in the same
order, all-reduces its rank inside each of its groups, and compares each group's members and
hosts with the plan snrun computed for the job. Rank 0 writes $SNRUN_JOB_DIR/groups.json.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from slurm_supernode.fsutil import write_json_atomic
from slurm_supernode.jobenv import JobEnvironment
from slurm_supernode.launch.inputs import load_inputs, rank_map_for_job
from slurm_supernode.placement.rankmap import group_ranks
from slurm_supernode.site.loader import load_site


def megatron_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--tensor-model-parallel-size", type=int, default=1)
    p.add_argument("--context-parallel-size", type=int, default=1)
    p.add_argument("--expert-model-parallel-size", type=int, default=1)
    p.add_argument("--expert-tensor-parallel-size", type=int, default=None)
    p.add_argument("--pipeline-model-parallel-size", type=int, default=1)
    p.add_argument("--use-tp-pp-dp-mapping", action="store_true")
    return p.parse_args(argv)


def rank_groups(world: int, sizes: dict[str, int], order: str, token: str) -> list[list[int]]:
    """Megatron's get_ranks(token): ranks equal in every coordinate outside ``token``.

    Coordinates are a mixed radix over ``order`` with its first name varying fastest; members
    are listed by that coordinate, groups by their first rank.
    """
    names = order.split("-")
    stride, step = {}, 1
    for n in names:
        stride[n] = step
        step *= sizes[n]
    assert step == world, (sizes, world)
    inside = [n for n in names if n in token.split("-")]
    outside = [n for n in names if n not in inside]
    groups = {}
    for r in range(world):
        key = tuple((r // stride[n]) % sizes[n] for n in outside)
        groups.setdefault(key, []).append(r)
    return sorted(groups.values(), key=lambda g: g[0])


def megatron_groups(world: int, a: argparse.Namespace) -> dict[str, list[list[int]]]:
    """The groups initialize_model_parallel creates, named by snrun's dimension names."""
    tp, cp, ep, pp = (
        a.tensor_model_parallel_size,
        a.context_parallel_size,
        a.expert_model_parallel_size,
        a.pipeline_model_parallel_size,
    )
    etp = a.expert_tensor_parallel_size or tp
    order = "tp-cp-ep-pp-dp" if a.use_tp_pp_dp_mapping else "tp-cp-ep-dp-pp"
    dense = {"tp": tp, "cp": cp, "ep": 1, "dp": world // (tp * cp * pp), "pp": pp}
    expert = {"tp": etp, "cp": 1, "ep": ep, "dp": world // (etp * ep * pp), "pp": pp}
    return {
        "dp": rank_groups(world, dense, order, "dp"),
        "cp": rank_groups(world, dense, order, "cp"),
        "tp": rank_groups(world, dense, order, "tp"),
        "pp": rank_groups(world, dense, order, "pp"),
        "ep": rank_groups(world, expert, order, "ep"),
        "etp": rank_groups(world, expert, order, "tp"),
        "edp": rank_groups(world, expert, order, "dp"),
    }


def main() -> int:
    args = megatron_args(sys.argv[1:])
    dist.init_process_group("gloo", timeout=timedelta(seconds=180))
    rank, world = dist.get_rank(), dist.get_world_size()
    job_env = JobEnvironment.from_environ()
    host = job_env.hostname()
    hosts: list[str | None] = [None] * world
    dist.all_gather_object(hosts, host)

    mine = megatron_groups(world, args)
    problems: list[str] = []
    sums: dict[str, float] = {}
    for dim, groups in mine.items():
        for members in groups:
            if len(members) == 1:
                continue  # a group of one talks to nobody
            group = dist.new_group(members)  # every rank creates every group, in order
            if rank in members:
                t = torch.tensor([float(rank + 1)])
                dist.all_reduce(t, group=group)
                want = float(sum(m + 1 for m in members))
                sums[dim] = t.item()
                if t.item() != want:
                    problems.append(f"{dim} all_reduce in {members} gave {t.item()}, want {want}")

    # what snrun planned for this job (the agent's own computation, from the job directory)
    job_dir = Path(os.environ["SNRUN_JOB_DIR"])
    inputs = load_inputs(job_dir)
    plan = rank_map_for_job(inputs, load_site(inputs.site_file), job_env.hosts())
    planned = {dim: group_ranks(plan, dim) for dim in mine}
    if rank == 0:
        for dim in mine:
            if planned[dim] != mine[dim]:
                problems.append(f"{dim} groups {mine[dim]} != plan {planned[dim]}")
            for members in mine[dim]:
                got = [hosts[m] for m in members]
                want_hosts = [plan.ranks[m].hostname for m in members]
                if got != want_hosts:
                    problems.append(f"{dim} group {members} ran on {got}, plan {want_hosts}")
    everyone: list[dict | None] = [None] * world
    dist.all_gather_object(everyone, {"rank": rank, "host": host, "problems": problems})
    if rank == 0:
        report = {
            "world_size": world,
            "layout": plan.layout.as_dict(),
            "groups": {d: [[(m, hosts[m]) for m in g] for g in gs] for d, gs in mine.items()},
            "problems": [p for r in everyone if r for p in r["problems"]],
        }
        report["ok"] = not report["problems"]
        write_json_atomic(job_dir / "groups.json", report)
        for dim, gs in mine.items():
            print(f"{dim:<4} {' '.join(str(g) for g in gs)}")
        print("groups match snrun plan" if report["ok"] else "GROUP MISMATCH")
    dist.destroy_process_group()
    return 0 if not problems else 3


if __name__ == "__main__":
    sys.exit(main())
