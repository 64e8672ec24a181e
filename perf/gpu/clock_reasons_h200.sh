#!/usr/bin/env bash
# The device evidence behind the slow-GPU judge (docs/observe.md "Slow nodes"), read on a real
# GPU through pynvml as runtime/device_stats.py reads it (SM clock, top clock, clock event
# reasons), idle and under a bf16 matmul loop, beside nvidia-smi's view of the same figures.
# Reads only; changes no setting. `OUT=perf/out bash perf/gpu/clock_reasons_h200.sh`; the run
# of 2026-12-03 on one H200 is perf/results/observe-h200/clock_reasons.txt.
set -u
OUT=${OUT:-perf/out}
mkdir -p "$OUT"
python3 - 2>&1 <<'PY' | tee "$OUT/clock_reasons.txt"
import subprocess, time, torch, pynvml as n
n.nvmlInit(); h = n.nvmlDeviceGetHandleByIndex(0)
W = {0x40:"hw thermal",0x20:"sw thermal",0x80:"power brake",0x8:"hw slowdown",0x4:"sw power cap",0x2:"app clocks",0x10:"sync boost",0x100:"display",0x1:"idle"}
def show(what):
    get = getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None) or n.nvmlDeviceGetCurrentClocksThrottleReasons
    r = int(get(h)); u = n.nvmlDeviceGetUtilizationRates(h).gpu
    print(what, "event-reasons fn:", get.__name__, "util", u, "SM", n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM), "max", n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_SM), "power", n.nvmlDeviceGetPowerUsage(h)/1000, "reasons", hex(r), [w for b, w in W.items() if r & b], flush=True)
    print(subprocess.run(["nvidia-smi","-i","0","--query-gpu=clocks.sm,clocks.max.sm,clocks_event_reasons.active,utilization.gpu","--format=csv"],capture_output=True,text=True).stdout, flush=True)
show("idle")
x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
t = time.time()
while time.time() - t < 8:
    for _ in range(50): y = x @ x
    torch.cuda.synchronize()
show("busy")
PY
