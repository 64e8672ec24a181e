#!/usr/bin/env bash
# The GPU evidence runs behind perf/results/h200x2.md (device kind nvidia-h200-x2).
# Run from a checkout root: `OUT=perf/out bash perf/h200_run.sh 1` (then `... 2`).
# Raw outputs go to $OUT. NVLink multicast stays off (NCCL_NVLS_ENABLE=0): the lending
# workplace requires it, and nccl-tests' reference figures in field-facts.md were taken so.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-perf/out}
BIG=${BIG:-4G}
PHASE=${1:-1}
mkdir -p "$OUT"

bench() {  # NAME TIMEOUT ARGS...: one torchrun of 2 ranks, table and JSON into $OUT
  local name=$1 limit=$2
  shift 2
  timeout "$limit" python3 -m torch.distributed.run --standalone --nproc-per-node 2 \
    -m slurm_supernode bench run --scopes world --site h200x2 "$@" --json "$OUT/$name.json" \
    >"$OUT/$name.txt" 2>&1
  echo "$name rc=$?" | tee -a "$OUT/runs.log"
}
if [ "$PHASE" = 1 ]; then
  {
    nvidia-smi
    nvidia-smi topo -m
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
      "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
    echo "cpus $(nproc) kernel $(uname -r)"
  } >"$OUT/machine.txt" 2>&1
  # every collective, bf16, CUDA-graph timing
  bench graph_bf16 240 --sizes "1K-$BIG" --dtype bfloat16 --iters 100 --warmup 5 --timing graph
  # all_reduce, plain loop timed by CUDA events (before the spin-kernel prefill existed:
  # this is field-facts' "plain torch.distributed loop")
  bench events_allreduce_bf16 120 --collectives all_reduce --sizes "1K-$BIG" \
    --dtype bfloat16 --iters 100 --warmup 5 --timing events
  # fp32 all_gather/all_reduce at large sizes (field-facts' all_gather fp32 512 MiB figure)
  bench graph_fp32 120 --collectives all_reduce,all_gather --sizes 64M-1G --dtype float32 \
    --iters 50 --warmup 5 --timing graph
else
  # every collective, bf16, events timing with the spin-kernel prefill
  bench events_bf16 240 --sizes "1K-$BIG" --dtype bfloat16 --iters 100 --warmup 5 \
    --timing events
  # why graph timing loses at 1-16 MiB all_reduce: without NCCL's graph buffer registration
  NCCL_GRAPH_REGISTER=0 bench graph_noreg_allreduce_bf16 120 --collectives all_reduce \
    --sizes 1K-256M --dtype bfloat16 --iters 100 --warmup 5 --timing graph
fi
