"""What watching a job costs a training step (docs/observe.md, "Cost"): the optimizer-step hook
and its records, the agent's sampler thread beside the ranks, and the profiler window.

Each case runs the same training loop in a fresh process (the hook is process-wide): plain; with
snrun's step hook; with the hook and a sampler thread (``--period``, default 1 s: ten times the
site's default rate); and the profiler window's steps against the others. On a GPU
(``--device cuda``) the loop is a CUDA model, the sampler reads NVML, and its figures are
printed beside nvidia-smi's taken at the same moment. Prints figures, asserts nothing; the
machine and its load go beside them.

    python3 perf/bench_observe.py [--device cpu|cuda] [--steps 300] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, os, sys, time
import torch
mode, device, steps, width = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
if mode != "plain":
    from slurm_supernode.runtime import step_hook
    assert step_hook.install()
stop = None
if mode == "sampler":
    from pathlib import Path
    from slurm_supernode.runtime.sampler import Sampler, device_source
    devs = tuple(range(torch.cuda.device_count())) if device == "cuda" else ()
    sampler = Sampler(Path(os.environ["SNRUN_JOB_DIR"]), 0, "bench", max_bytes=1 << 30,
                      devices=device_source("nvidia", "bench", devs))
    stop = sampler.start(float(os.environ["BENCH_PERIOD"]))
torch.manual_seed(0)
layers = [torch.nn.Linear(width, width) for _ in range(4)]
model = torch.nn.Sequential(*layers).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(64 if device == "cpu" else 4096, width, device=device)
times = []
for i in range(steps):
    t0 = time.perf_counter()
    loss = model(x).float().pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if device == "cuda":
        torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
if stop is not None:
    stop.set()
from slurm_supernode.runtime import step_hook
step_hook.finish()
print(json.dumps(times))
"""


def run_case(mode: str, device: str, steps: int, width: int, job: Path, extra: dict) -> list:
    env = os.environ | {
        "PYTHONPATH": str(ROOT),
        "SNRUN_JOB_DIR": str(job),
        "SNRUN_NODE": "bench",
        "RANK": "0",
        "LOCAL_RANK": "0",
        "SNRUN_ATTEMPT": "0",
        **extra,
    }
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, device, str(steps), str(width)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def nvml_vs_smi(steps: int, width: int, job: Path) -> None:
    """NVML through snrun's sampler and nvidia-smi's figures, taken one after the other while
    a CUDA training loop runs in another process (and once more after it, idle)."""
    import torch

    from slurm_supernode.runtime.device_stats import NvmlDevices

    env = os.environ | {"PYTHONPATH": str(ROOT)}
    loop = subprocess.Popen(
        [sys.executable, "-c", CHILD, "plain", "cuda", str(steps * 3), str(width)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    source = NvmlDevices("bench", tuple(range(torch.cuda.device_count())))
    query = "index,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,clocks.sm"
    for label in ("under load", "under load", "idle"):
        if label == "idle":
            loop.wait()
            time.sleep(2)
        else:
            time.sleep(12)  # past the child's start (torch import, CUDA context)
        samples, missing = source.read(time.time())
        smi = (
            subprocess.run(
                ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
            )
            .stdout.strip()
            .splitlines()
        )
        print(f"NVML (snrun's sampler) then nvidia-smi, {label}; missing: {missing or 'nothing'}")
        for s, line in zip(samples, smi, strict=False):
            print(
                f"  gpu {s.index}: nvml util {s.util_percent:.0f}% mem {s.mem_used_bytes >> 20}/"
                f"{s.mem_total_bytes >> 20} MiB temp {s.temperature_c:.0f} C power "
                f"{s.power_w:.1f} W sm {s.sm_clock_mhz:.0f} MHz ecc {s.ecc_errors} "
                f"xid {s.xid}"
            )
            print(f"          smi  {line}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--width", type=int, default=0, help="default: 512 on CPU, 4096 on CUDA")
    p.add_argument("--period", type=float, default=1.0, help="sampler period in the run")
    args = p.parse_args()
    width = args.width or (512 if args.device == "cpu" else 4096)
    print(
        f"# {time.strftime('%F %T UTC', time.gmtime())} on {os.uname().nodename}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; device {args.device}, "
        f"width {width}, {args.steps} steps x {args.repeats}"
    )
    medians: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            for mode in ("plain", "hook", "sampler"):
                job = Path(tmp) / f"{mode}{r}"
                extra = {"BENCH_PERIOD": str(args.period), "SNRUN_PROFILE_STEPS": "0"}
                times = run_case(mode, args.device, args.steps, width, job, extra)
                medians.setdefault(mode, []).append(statistics.median(times[10:]))
            # the profiler window: 5 steps profiled after step 100, against the steps around
            job = Path(tmp) / f"window{r}"
            extra = {"SNRUN_PROFILE_AFTER": "100", "SNRUN_PROFILE_STEPS": "5"}
            times = run_case("hook", args.device, args.steps, width, job, extra)
            window = sum(times[100:106])
            normal = statistics.median(times[10:95] + times[120:]) * 6
            medians.setdefault("window_extra", []).append(window - normal)
        plain = statistics.median(medians["plain"])
        print(f"step (median of {args.repeats} runs' medians): plain {plain * 1e3:.3f} ms")
        for mode, what in (
            ("hook", "with the step hook"),
            ("sampler", f"hook + sampler every {args.period:g} s"),
        ):
            t = statistics.median(medians[mode])
            print(f"  {what:<32} {t * 1e3:.3f} ms  ({100 * (t / plain - 1):+.2f}%)")
        extra_s = statistics.median(medians["window_extra"])
        print(
            f"profiler window (5 steps + export + reduce): {extra_s * 1e3:.1f} ms more than "
            f"6 plain steps, once per attempt"
        )
        from slurm_supernode.runtime.sampler import Sampler

        job = Path(tmp) / "round"
        sampler = Sampler(job, 0, "bench", devices=None, max_bytes=1 << 30)
        t0 = time.perf_counter()
        for _ in range(200):
            sampler.round()
        per = (time.perf_counter() - t0) / 200
        size = (job / "observe" / "0" / "bench.samples.jsonl").stat().st_size / 200
        print(
            f"sampler round without devices: {per * 1e6:.0f} us, {size:.0f} bytes a line "
            f"({size * 8640 / 1e6:.1f} MB a node-day at 10 s)"
        )
        if args.device == "cuda":
            nvml_vs_smi(args.steps, width, Path(tmp))


if __name__ == "__main__":
    main()
