"""What watching a job costs a training step (docs/observe.md, "Cost"): the optimizer-step hook
and its records, the agent's sampler thread beside the ranks, and the profiler window.

One process runs the training loop in blocks of ``--block`` steps, three arms in turn: plain
(snrun's hook taken out again: ``step_hook.uninstall``); with the step hook; with the hook and a
sampler thread (``--period``, default 1 s: ten times the site's default rate) running during the
block. The order of the arms rotates every round, so a change of the machine's load between
rounds moves all three alike, and one process holds them all, so its memory layout (which
moves a small CPU loop by 20-40% from one process to the next on this machine: an A/A run of
two plain processes) favours none. Each arm's block is compared with the plain block of the
same round; the paired differences are summarised (median, quartiles, min-max over
``--rounds``). The profiler window opens once, in a block of its own after the rounds, measured
against the hook arm's blocks. On a GPU (``--device cuda``) the loop is a CUDA model, the
sampler reads NVML, and its figures are printed beside nvidia-smi's. Prints figures, asserts
nothing; the machine and its load (``/proc/loadavg``, before and after) go beside them.

    python3 perf/bench_observe.py [--device cpu|cuda] [--rounds 30] [--block 50]
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
sys.path.insert(0, str(ROOT))  # this checkout's snrun, as the loop's process gets it
WINDOW_STEPS = 5
ARMS = ("plain", "hook", "sampler")

# The loop's process: imports torch once, then runs "ARM N" blocks from stdin, printing each
# block's step times as one JSON line ("plain N" with no command first: the CUDA check's load).
CHILD = r"""
import json, os, sys, time
from pathlib import Path
import torch
from slurm_supernode.runtime import step_hook
from slurm_supernode.runtime.sampler import Sampler, device_source
device, width = sys.argv[1], int(sys.argv[2])
job, period = Path(os.environ["SNRUN_JOB_DIR"]), float(os.environ.get("BENCH_PERIOD", "1"))
devs = tuple(range(torch.cuda.device_count())) if device == "cuda" else ()
source = device_source("nvidia", "bench", devs)
sampler = Sampler(job, 0, "bench", max_bytes=1 << 30, devices=source)
no_window = dict(os.environ, SNRUN_PROFILE_STEPS="0")
torch.manual_seed(0)
layers = [torch.nn.Linear(width, width) for _ in range(4)]
model = torch.nn.Sequential(*layers).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(64 if device == "cpu" else 4096, width, device=device)
print("ready", flush=True)
def hook_cost(chunks=10, calls=2000):
    # the hook's own time: a step of an optimizer with one scalar, with and without the hook,
    # in alternating chunks (the difference is what the hook adds to any step)
    p = torch.zeros(1, requires_grad=True)
    p.grad = torch.zeros(1)
    tiny = torch.optim.SGD([p], lr=0.0)
    per = {"plain": [], "hook": []}
    for c in range(chunks):
        for arm in (("plain", "hook") if c % 2 else ("hook", "plain")):
            step_hook.uninstall()
            if arm == "hook":
                step_hook.install(no_window)
            t0 = time.perf_counter()
            for _ in range(calls):
                tiny.step()
            per[arm].append((time.perf_counter() - t0) / calls)
    step_hook.uninstall()
    return per
for line in sys.stdin:
    words = line.split()
    if words == ["hookcost"]:
        print(json.dumps(hook_cost()), flush=True)
        continue
    if len(words) != 2:
        break
    arm, steps = words[0], int(words[1])
    step_hook.uninstall()
    stop = None
    if arm in ("hook", "sampler"):
        assert step_hook.install(no_window)
    if arm == "window":  # profiled from the middle of the block, as after warm-up in a job
        rec = step_hook.step_recorder.current()
        after = (rec.step if rec else 0) + steps // 2
        steps_env = os.environ["BENCH_WINDOW"]
        env = dict(os.environ, SNRUN_PROFILE_AFTER=str(after), SNRUN_PROFILE_STEPS=steps_env)
        assert step_hook.install(env)
    if arm == "sampler":
        stop = sampler.start(period)
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
    print(json.dumps(times), flush=True)
step_hook.finish()
"""


class Loop:
    """The loop's process, started once; ``run(arm, steps)`` times one block."""

    def __init__(self, device: str, width: int, job: Path, period: float) -> None:
        env = os.environ | {
            "PYTHONPATH": str(ROOT),
            "SNRUN_JOB_DIR": str(job),
            "SNRUN_NODE": "bench",
            "RANK": "0",
            "LOCAL_RANK": "0",
            "SNRUN_ATTEMPT": "0",
            "OMP_NUM_THREADS": "1",  # what snrun gives ranks by default
            "BENCH_PERIOD": str(period),
            "BENCH_WINDOW": str(WINDOW_STEPS),
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, device, str(width)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            raise SystemExit(f"the training loop did not start: {line!r}")

    def run(self, arm: str, steps: int) -> list[float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{arm} {steps}\n")
        self.proc.stdin.flush()
        return list(json.loads(self.proc.stdout.readline()))

    def hook_cost(self) -> dict[str, list[float]]:
        """Seconds per call of a one-scalar optimizer's step, with and without the hook."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("hookcost\n")
        self.proc.stdin.flush()
        return dict(json.loads(self.proc.stdout.readline()))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def spread(values: list[float]) -> str:
    """Median [quartiles] (min..max) of percentages."""
    q = (
        statistics.quantiles(values, n=4, method="inclusive")
        if len(values) >= 2
        else [values[0]] * 3
    )
    return (
        f"{statistics.median(values):+.2f}% [quartiles {q[0]:+.2f}..{q[2]:+.2f}] "
        f"(min..max {min(values):+.2f}..{max(values):+.2f})"
    )


def nvml_vs_smi(steps: int, width: int, job: Path) -> None:
    """NVML through snrun's sampler and nvidia-smi's figures, taken one after the other while
    a CUDA training loop runs in another process (and once more after it, idle)."""
    import torch

    from slurm_supernode.runtime.device_stats import NvmlDevices

    env = os.environ | {"PYTHONPATH": str(ROOT)}
    loop = subprocess.Popen(
        [sys.executable, "-c", CHILD, "cuda", str(width)],
        env=env | {"SNRUN_JOB_DIR": str(job), "SNRUN_NODE": "bench", "BENCH_WINDOW": "0"},
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert loop.stdin is not None
    loop.stdin.write(f"plain {steps * 3}\nquit\n")
    loop.stdin.close()
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
    p.add_argument("--rounds", type=int, default=30, help="rounds of one block per arm")
    p.add_argument("--block", type=int, default=50, help="steps per block")
    p.add_argument("--width", type=int, default=0, help="default: 512 on CPU, 4096 on CUDA")
    p.add_argument("--period", type=float, default=1.0, help="sampler period in the run")
    args = p.parse_args()
    width = args.width or (512 if args.device == "cpu" else 4096)
    started = time.monotonic()
    print(
        f"# {time.strftime('%F %T UTC', time.gmtime())} on {os.uname().nodename}, "
        f"{os.cpu_count()} CPUs, loadavg {loadavg()} at the start; device {args.device}, "
        f"width {width}, {args.rounds} rounds x {args.block} steps per arm, interleaved in "
        "one process"
    )
    with tempfile.TemporaryDirectory() as tmp:
        loop = Loop(args.device, width, Path(tmp) / "job", args.period)
        for arm in ARMS:  # warm-up: allocator, caches, the first steps' start-up
            loop.run(arm, args.block)
        blocks: dict[str, list[list[float]]] = {arm: [] for arm in ARMS}
        for r in range(args.rounds):
            for k in range(len(ARMS)):  # the order rotates: no arm always runs first
                arm = ARMS[(r + k) % len(ARMS)]
                blocks[arm].append(loop.run(arm, args.block))
        window = loop.run("window", args.block)
        cost = loop.hook_cost()
        loop.close()
        report(args, blocks, window, cost)
        sampler_round(Path(tmp))
        if args.device == "cuda":
            nvml_vs_smi(args.block * 4, width, Path(tmp))
    print(f"# loadavg {loadavg()} at the end; {time.monotonic() - started:.0f} s in all")


def report(
    args: argparse.Namespace,
    blocks: dict[str, list[list[float]]],
    window: list[float],
    cost: dict[str, list[float]],
) -> None:
    """Each arm against the plain block of the same round; the window against the hook arm."""
    med = {arm: [statistics.median(b) for b in bs] for arm, bs in blocks.items()}
    plain = statistics.median(med["plain"])
    print(
        f"plain step: {plain * 1e3:.3f} ms (median of {args.rounds} blocks' medians; blocks "
        f"{min(med['plain']) * 1e3:.3f}..{max(med['plain']) * 1e3:.3f} ms)"
    )
    for arm, what in (
        ("hook", "step hook"),
        ("sampler", f"step hook + sampler every {args.period:g} s"),
    ):
        diffs = [100 * (m / med["plain"][i] - 1) for i, m in enumerate(med[arm])]
        means = [
            100 * (statistics.fmean(b) / statistics.fmean(blocks["plain"][i]) - 1)
            for i, b in enumerate(blocks[arm])
        ]
        print(f"  {what:<36} median step {spread(diffs)} against plain, paired by round")
        print(f"  {'':<36} mean step   {spread(means)}")
    added = [h - p for h, p in zip(cost["hook"], cost["plain"], strict=True)]
    us = statistics.median(added) * 1e6
    print(
        f"the hook's own time per step (a one-scalar optimizer's step with and without it, "
        f"{len(added)} chunks): {us:.1f} us (chunks {min(added) * 1e6:.1f}..{max(added) * 1e6:.1f}"
        f" us) = {100 * us / 1e6 / plain:.3f}% of the plain step"
    )
    # the window opens in the hook of the block's step half-1 and closes (export, reduce) in
    # that of step half-1+WINDOW_STEPS: those steps, a step of margin each side, against the
    # median of the block's other steps
    half = len(window) // 2
    inside = range(max(0, half - 2), min(len(window), half + WINDOW_STEPS + 1))
    rest = [t for i, t in enumerate(window) if i not in inside]
    extra = sum(window[i] for i in inside) - statistics.median(rest) * len(inside)
    print(
        f"profiler window ({WINDOW_STEPS} steps profiled + export + reduce): {extra * 1e3:.1f} "
        f"ms more than {len(inside)} steps at the median of the block's other steps, once per "
        f"attempt ({extra / plain:.1f} plain steps)"
    )


def sampler_round(tmp: Path) -> None:
    from slurm_supernode.runtime.sampler import Sampler

    job = tmp / "round"
    sampler = Sampler(job, 0, "bench", devices=None, max_bytes=1 << 30)
    t0 = time.perf_counter()
    for _ in range(200):
        sampler.round()
    per = (time.perf_counter() - t0) / 200
    size = (job / "observe" / "0" / "bench.samples.jsonl").stat().st_size / 200
    print(
        f"sampler round without devices: {per * 1e6:.0f} us, {size:.0f} bytes a line "
        f"({size * 8640 / 1e6:.1f} MB a node-day at 10 s); a thread that works {per * 1e6:.0f} "
        f"us a period takes {100 * per / 10:.4f}% of one CPU at the default 10 s, "
        f"{100 * per:.3f}% at 1 s"
    )


if __name__ == "__main__":
    main()
