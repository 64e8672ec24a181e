"""A small data-parallel training loop (gloo, a real optimizer) that snrun watches with no change
to its code: step times from torch's optimizer-step hook, a profiler window, node samples. See
docs/observe.md.

    snrun -S 2 --nproc-per-node 1 --env-profile gloo contrib/examples/train_observed.py --seconds 60

The one optional line is ``progress.report(loss=...)``: the loss beside each step.

Making one node slow on purpose (snrun's own test of the slow-node judge): with
``SNRUN_EXAMPLE_SLOW_HOST=n1`` (``--env``), the ranks on the node of that name (Slurm's node
name) compute ``--slow-ms`` more per step (a CPU busy loop, as a slower device would take), and
every rank waits for them in the all-reduce.
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from slurm_supernode import progress


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=30.0, help="train this long, then stop")
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--slow-ms", type=float, default=80.0, help="extra work on the slow host")
    p.add_argument("--step-time", type=float, default=0.05, help="pause per step (data wait)")
    return p.parse_args()


def busy(ms: float) -> None:
    """Work the CPU for ``ms`` milliseconds of its own time (not asleep)."""
    end = time.thread_time() + ms / 1000
    while time.thread_time() < end:
        pass


def main() -> int:
    args = parse()
    dist.init_process_group("gloo", timeout=timedelta(seconds=120))
    world = dist.get_world_size()
    slow = os.environ.get("SNRUN_EXAMPLE_SLOW_HOST")
    here = os.environ.get("SLURMD_NODENAME") or os.uname().nodename
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(args.width, args.width), torch.nn.ReLU(), torch.nn.Linear(args.width, 1)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    heartbeat = os.environ.get("SNRUN_HEARTBEAT_FILE")
    # every rank stops at the same step: rank 0's clock decides, shared in the all-reduce
    stop, step, start = torch.zeros(1), 0, time.time()
    while True:
        x = torch.randn(32, args.width)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        if slow and here == slow:
            busy(args.slow_ms)
        time.sleep(args.step_time)
        stop.fill_(1.0 if dist.get_rank() == 0 and time.time() - start > args.seconds else 0.0)
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        for g in grads:
            dist.all_reduce(g)
            g /= world
        dist.all_reduce(stop)
        opt.step()
        progress.report(loss=float(loss))
        step += 1
        if heartbeat and dist.get_rank() == 0 and step % 10 == 0:
            with open(heartbeat, "w") as fh:
                fh.write(f"step {step}\n")
        if stop.item() > 0:
            break
    if heartbeat and dist.get_rank() == 0:
        with open(heartbeat, "w") as fh:
            fh.write(f"done {step}\n")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
