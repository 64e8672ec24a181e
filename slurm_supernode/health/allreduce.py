"""A small all-reduce across this node's devices, under a timeout (``snrun health --allreduce``).

The parent imports no torch: it starts ``nproc`` worker processes of this module (one per
device for nccl, two for gloo on CPUs), which rendezvous on a free local port, all-reduce a
1 MiB tensor a few times and check the sum exactly. A hang (a broken NVLink, a stuck driver)
shows up as the timeout, which is what a prolog needs to catch.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from slurm_supernode.health.checks import CRITICAL, OK, CheckResult

ELEMENTS = 1 << 18  # 1 MiB of float32
RESULT_PREFIX = "snrun-health-allreduce: "  # the result line of ``check`` (JSON follows)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def world_of(backend: str, devices: int, nproc: int | None) -> tuple[str, int]:
    """The backend (``auto``: nccl where the node has NVIDIA devices, else gloo) and the
    number of ranks (default: one per device for nccl, two for gloo)."""
    if backend == "auto":
        backend = "nccl" if devices > 0 and os.path.exists("/dev/nvidiactl") else "gloo"
    return backend, nproc or (devices if backend == "nccl" and devices > 0 else 2)


def allreduce_check(
    *, nproc: int | None, devices: int, backend: str = "auto", timeout: float = 30.0
) -> CheckResult:
    """Run the workers; critical on a wrong sum, a failure or the timeout."""
    backend, n = world_of(backend, devices, nproc)
    port = _free_port()
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "slurm_supernode.health.allreduce", str(r), str(n), backend],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(n)
    ]
    failed: list[str] = []
    try:
        for r, proc in enumerate(procs):
            left = max(0.1, timeout - (time.monotonic() - started))
            out, _ = proc.communicate(timeout=left)
            if proc.returncode != 0:
                lines = [ln for ln in out.strip().splitlines() if ln.strip()]
                failed.append(f"rank {r}: {lines[-1] if lines else f'exit {proc.returncode}'}")
    except subprocess.TimeoutExpired:
        return CheckResult(
            "allreduce", CRITICAL, f"{backend} all-reduce of {n} ranks hung > {timeout:g} s"
        )
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    took = time.monotonic() - started
    if failed:
        return CheckResult("allreduce", CRITICAL, f"{backend} all-reduce failed: {failed[0]}")
    return CheckResult("allreduce", OK, f"{backend} all-reduce of {n} ranks ok in {took:.1f} s")


def _worker(rank: int, world: int, backend: str) -> int:
    import datetime

    import torch
    import torch.distributed as dist

    if backend == "nccl":
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group(
        backend, rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60)
    )
    try:
        x = torch.full((ELEMENTS,), float(rank + 1), device=device)
        for _ in range(3):
            y = x.clone()
            dist.all_reduce(y)
        expected = world * (world + 1) / 2
        wrong = int((y != expected).sum().item())
        if wrong:
            print(f"{wrong} wrong elements (expected {expected:g})")
            return 1
        return 0
    finally:
        dist.destroy_process_group()


def _check_main(nproc: int, backend: str, timeout: float) -> int:
    """``check N BACKEND TIMEOUT``: the whole check, its result as one JSON line on stdout
    (how ``snrun health --container-image`` runs it inside the image and reads it back)."""
    import dataclasses
    import json

    result = allreduce_check(nproc=nproc, devices=0, backend=backend, timeout=timeout)
    print(RESULT_PREFIX + json.dumps(dataclasses.asdict(result)), flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "check":
        sys.exit(_check_main(int(sys.argv[2]), sys.argv[3], float(sys.argv[4])))
    sys.exit(_worker(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]))
