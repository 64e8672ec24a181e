#!/usr/bin/env bash
# `snrun doctor` on a GPU host without Slurm (kind nvidia-h200-x2): the in-allocation part run
# by snrun's agent the way srun would run it (SLURM_* set by hand, as agent_nccl_check.sh
# does), then the login part judges the facts file. Two runs: the site lists the GPUs in
# nvidia-smi order, then REVERSED (rank 0 must land on the last GPU; the PCI mapping step
# checks each rank's bus id against nvidia-smi's). Raw output into $OUT (8 files at most).
# N=2 on a machine without GPUs runs the same path over gloo (a dry test of this script).
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH=$PWD:$PWD/build/pydeps PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 NCCL_MNNVL_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/doctor-h200}
WORK=${WORK:-/tmp/doctor-work}
mkdir -p "$OUT" "$WORK"
H=$(hostname -s)
N=${N:-$(nvidia-smi -L | wc -l)}
SIZE=${SIZE:-1073741824}
{
  git log --oneline -1 2>/dev/null
  nvidia-smi; nvidia-smi topo -m
  nvidia-smi -q | grep -A5 -E "^GPU |^    Fabric"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
    "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else "-",
    "gpus", torch.cuda.device_count())'
  echo "cpus $(nproc) kernel $(uname -r) host $H"
} >"$OUT/machine.txt" 2>&1

doctor() {  # NAME DEVICE_ORDER
  local name=$1 order=$2 dir="$WORK/$1"
  mkdir -p "$dir/ckpt"
  cat >"$dir/site.yaml" <<YAML
name: h200x2
vendor: nvidia
supernodes:
  - {name: sn0, nodes: "$H"}
node_defaults:
  devices: $N
  device_groups: [[$order]]
links:
  node: {bandwidth_GBps: 450, latency_us: 2, kind: nvlink4-nv18}
  supernode: {bandwidth_GBps: 450, latency_us: 2, kind: nvlink4-nv18}
  inter: {bandwidth_GBps: 50, latency_us: 5, kind: none}
slurm: {partition: gpu, strategy: features}
env_profiles:
  default: {NCCL_NVLS_ENABLE: "0", NCCL_MNNVL_ENABLE: "0", TORCH_NCCL_ASYNC_ERROR_HANDLING: "3"}
paths: {jobs_dir: $dir/jobs, results_db: $dir/bench.sqlite}
doctor: {size: $SIZE, storage_mb: 512, checkpoint_dir: $dir/ckpt}
YAML
  local job_dir
  job_dir=$(python3 - "$dir" <<'PY'
import sys
from pathlib import Path
from slurm_supernode.doctor.job import DoctorJob, plan_doctor
from slurm_supernode.launch.job import write_job_dir
from slurm_supernode.site.loader import load_site
d = Path(sys.argv[1])
site = load_site(str(d / "site.yaml"))
plan = plan_doctor(site, DoctorJob(site_arg=str(d / "site.yaml")), None, jobs_root=d / "jobs",
                   token="gpu0")
write_job_dir(plan)
print(plan.job_dir)
PY
)
  (
    set -a; eval "$(python3 -c "import json; e=json.load(open('$job_dir/env.json'))
print('\n'.join(f'{k}={v!r}' for k, v in e.items()))")"; set +a
    argv=$(python3 -c "import json, shlex; print(shlex.join(json.load(open('$job_dir/plan.json'))['program_argv']))")
    T0=$(date +%s)
    eval SLURM_JOB_NODELIST=$H SLURMD_NODENAME=$H SLURM_JOB_ID=1 SNRUN_JOB_DIR=$job_dir \
      SNRUN_SITE_FILE=$job_dir/site.yaml SNRUN_NODELIST=$H \
      timeout 240 python3 -m slurm_supernode agent --job-dir "$job_dir" -- "$argv"
    echo "agent rc=$? in $(( $(date +%s) - T0 )) s"
  ) >"$WORK/$name-agent.log" 2>&1
  python3 -m slurm_supernode doctor --site "$dir/site.yaml" --facts "$job_dir/doctor-facts.json" \
    --html "$WORK/$name-doctor.html" >"$WORK/$name-doctor.txt" 2>&1
  echo "doctor rc=$?" >>"$WORK/$name-doctor.txt"
  cp "$job_dir/doctor-facts.json" "$WORK/$name-facts.json" 2>/dev/null
  echo "$name: $(tail -1 "$WORK/$name-agent.log"); $(tail -1 "$WORK/$name-doctor.txt")"
}
doctor natural "$(seq -s, 0 $((N - 1)))"
doctor reversed "$(seq -s, $((N - 1)) -1 0)"
cp "$WORK"/natural-agent.log "$WORK"/natural-facts.json "$WORK"/natural-doctor.txt \
   "$WORK"/natural-doctor.html "$OUT"/
{ cat "$WORK"/reversed-doctor.txt; echo "--- agent log (tail) ---"; tail -40 "$WORK"/reversed-agent.log; } \
  >"$OUT"/reversed-doctor.txt
cp "$WORK"/reversed-facts.json "$OUT"/
cp "$WORK"/natural-doctor.json "$OUT"/ 2>/dev/null
ls -la "$OUT"
