"""A tiny job for snrun's own tests and for trying `snrun logs`, `snrun status`, `snrun attach`.

    snrun -N 2 --allow-partial --nproc-per-node 2 contrib/examples/ranks_report.py --fail-rank 3

Every rank joins a gloo group, prints a line to stdout and one to stderr. ``--fail-rank R``
makes rank R raise a ValueError (its message shows in `snrun status`); ``--sleep S`` keeps the
ranks alive S seconds (to attach to them); rank 0 prints VERSION (the snapshot test edits it
after submission).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import timedelta

import torch.distributed as dist

VERSION = "v1"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fail-rank", type=int, default=-1)
    p.add_argument("--sleep", type=float, default=0.0)
    p.add_argument("--sleep-attempt", type=int, default=-1, help="sleep only in this attempt")
    args = p.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    rank = dist.get_rank()
    attempt = int(os.environ.get("SNRUN_ATTEMPT", "0"))
    print(f"hello from rank {rank} on {os.environ.get('SLURMD_NODENAME')}", flush=True)
    print(f"rank {rank} stderr line", file=sys.stderr, flush=True)
    if rank == 0:
        print(f"version {VERSION} attempt {attempt}", flush=True)
    if args.sleep and args.sleep_attempt in (-1, attempt):
        time.sleep(args.sleep)
    if rank == args.fail_rank:
        raise ValueError(f"bad learning rate on rank {rank}")
    dist.barrier()  # the others fail here when a rank is gone, as in training
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
