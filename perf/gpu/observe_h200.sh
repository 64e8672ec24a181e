#!/usr/bin/env bash
# The GPU evidence behind docs/benchmarks.md "Watching a job": bench_observe.py on CUDA (hook,
# sampler with NVML, profiler window; NVML against nvidia-smi), then one real rank of torchrun
# (forked worker through snrun's rank entry, NCCL) with its profiler window, to show a CUDA
# trace reduced to compute / exposed / overlapped communication. Run from a checkout root:
# `OUT=perf/out bash perf/gpu/observe_h200.sh`. (PYTORCH_NVML_BASED_CUDA_CHECK=1: what the agent
# sets for forked workers, else torchrun initialises CUDA before forking.)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-perf/out}
mkdir -p "$OUT"
{ nvidia-smi; python3 -c 'import torch, pynvml; print("torch", torch.__version__, "nvml", pynvml.__file__)'; } >"$OUT/machine.txt" 2>&1
# (the H200 figures in perf/results/observe-h200 came from the earlier one-process-per-case
# design, --steps 200 --repeats 3; the interleaved design takes rounds of blocks instead)
timeout 400 python3 perf/bench_observe.py --device cuda --rounds 10 --block 60 >"$OUT/bench_observe_cuda.txt" 2>&1
echo "bench rc=$?" >>"$OUT/runs.log"
job=$(mktemp -d)
cat >"$job/train.py" <<'PY'
import os, torch, torch.distributed as dist
dist.init_process_group("nccl")
torch.cuda.set_device(0)
model = torch.nn.Sequential(*[torch.nn.Linear(8192, 8192) for _ in range(4)]).cuda()
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
x = torch.randn(2048, 8192, device="cuda")
for i in range(30):
    loss = ddp(x).float().pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
torch.cuda.synchronize()
dist.destroy_process_group()
PY
PYTORCH_NVML_BASED_CUDA_CHECK=1 SNRUN_JOB_DIR=$job SNRUN_NODE=h200 SNRUN_ATTEMPT=0 SNRUN_PROFILE_AFTER=10 SNRUN_PROFILE_STEPS=3 \
  timeout 240 python3 -m torch.distributed.run --standalone --nproc-per-node 1 --run-path \
  --start-method=fork slurm_supernode/runtime/rank_entry.py "$job/train.py" >"$OUT/rank.txt" 2>&1
echo "rank rc=$?" >>"$OUT/runs.log"
cat "$job"/observe/0/rank-0.comm.jsonl >"$OUT/comm.jsonl" 2>&1
tail -3 "$job"/observe/0/rank-0.steps.jsonl >"$OUT/steps_tail.jsonl" 2>&1
ls -la "$job"/observe/0/traces >>"$OUT/runs.log" 2>&1
