"""A training loop that follows snrun's protocol: it resumes, reports progress, checkpoints on
SIGUSR2 and exits cleanly so the job can requeue itself. See docs/resubmission.md.

    snrun -S 1 --nproc-per-node 2 contrib/examples/train_resumable.py --steps 50

What snrun gives the script (environment):
  SNRUN_ATTEMPT          0, 1, 2, ... across the whole chain (restarts and requeues)
  SLURM_RESTART_COUNT    how often Slurm requeued this job id
  SNRUN_CHECKPOINT_DIR   where to write and find checkpoints (shared by every attempt)
  SNRUN_HEARTBEAT_FILE   write your progress here, first line (e.g. "step 42"): it feeds hang
                         detection and the "same failure twice at the same point" rule
  SIGUSR2                the time limit is near: checkpoint now and exit 0

The --fail-* options inject faults for snrun's own tests.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--step-time", type=float, default=0.2)
    p.add_argument("--ckpt-every", type=int, default=10, help="checkpoint every N steps")
    p.add_argument("--fail-attempt", type=int, default=-1, help="inject a fault in this attempt")
    p.add_argument("--fail-always", action="store_true", help="fail in every attempt")
    p.add_argument("--fail-rank", type=int, default=1)
    p.add_argument("--fail-step", type=int, default=3)
    p.add_argument(
        "--fail-mode", choices=("exit", "raise", "kill", "hang", "collective"), default="exit"
    )  # collective: the rank waits in a gloo recv that nobody sends (a stuck collective);
    # raise: an exception (its traceback goes to the rank's stderr). A --fail-step equal to
    # --steps fails after the last step, when the other ranks have finished their work.
    p.add_argument("--no-heartbeat", action="store_true", help="write no heartbeat file")
    return p.parse_args()


def main() -> int:
    args = parse()
    stop = {"requested": False}
    signal.signal(signal.SIGUSR2, lambda *_: stop.__setitem__("requested", True))

    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    # every rank is connected before any can leave: an attempt resumed at its last step has no
    # collective to do, and a rank that exits while a peer still builds gloo's mesh fails that
    # peer ("Connection closed by peer": seen in CI, a restart resumed at the end)
    dist.barrier()
    rank = dist.get_rank()
    attempt = int(os.environ.get("SNRUN_ATTEMPT", "0"))
    ckpt_dir = Path(os.environ.get("SNRUN_CHECKPOINT_DIR", "checkpoints"))
    ckpt = ckpt_dir / "state.json"
    heartbeat = None if args.no_heartbeat else os.environ.get("SNRUN_HEARTBEAT_FILE")

    state = {"step": 0, "value": 0.0}
    if ckpt.exists():
        state = json.loads(ckpt.read_text())
    start = state["step"]
    if rank == 0:
        print(f"attempt {attempt}: starting at step {start}", flush=True)

    faulty = (args.fail_always or attempt == args.fail_attempt) and rank == args.fail_rank
    for step in range(start, args.steps):
        if faulty and step == args.fail_step:
            inject(args.fail_mode, rank, step)
        t = torch.ones(1) * (rank + 1)
        dist.all_reduce(t)
        state = {"step": step + 1, "value": state["value"] + t.item()}
        if rank == 0 and heartbeat:
            Path(heartbeat).write_text(f"step {step + 1}\nattempt {attempt}\n")
        if rank == 0 and args.ckpt_every and state["step"] % args.ckpt_every == 0:
            save(ckpt, state)
        time.sleep(args.step_time)
        flag = torch.tensor([1.0 if stop["requested"] else 0.0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)  # every rank stops at the same step
        if flag.item() > 0:
            if rank == 0:
                save(ckpt, state)
                print(f"attempt {attempt}: SIGUSR2, checkpoint at step {state['step']}", flush=True)
            dist.barrier()
            dist.destroy_process_group()
            return 0
    if faulty and args.fail_step >= args.steps:
        inject(args.fail_mode, rank, state["step"])
    if rank == 0:
        save(ckpt, state)
        if heartbeat:  # "done": the supervisor stops watching for hangs while we shut down
            Path(heartbeat).write_text(f"done step {state['step']}\nattempt {attempt}\n")
        print(f"attempt {attempt}: done, {state['step']} steps, value {state['value']}", flush=True)
    dist.destroy_process_group()
    return 0


def inject(mode: str, rank: int, step: int) -> None:
    """The injected fault; its time is printed for benchmarks (epoch seconds)."""
    print(f"rank {rank}: injected failure at step {step} (t={time.time():.3f})", flush=True)
    if mode == "exit":
        sys.exit(1)
    if mode == "raise":
        raise RuntimeError(f"injected failure on rank {rank} at step {step}")
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "collective":
        dist.recv(torch.zeros(1), src=(rank + 1) % dist.get_world_size())
    time.sleep(3600)  # hang


def save(path: Path, state: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
