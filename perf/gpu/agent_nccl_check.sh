#!/usr/bin/env bash
# On a GPU host without Slurm: plan a job for this one node, run snrun's agent the way srun
# would (SLURM_* set by hand), NCCL across all its GPUs. The site lists the devices in REVERSED
# order, so rank 0 must land on the highest-numbered GPU: each rank reports the PCI bus id of
# its CUDA device, compared here with nvidia-smi's bus id of the device the rank map names.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/agent-check}
mkdir -p "$OUT"
H=$(hostname)
N=$(nvidia-smi -L | wc -l)
REV=$(seq -s, $((N - 1)) -1 0)
TP=${TP:-$N}
FORK=${FORK:-0}  # 1: the job uses --fork-workers (torchrun forks workers after importing torch)
cat >"$OUT/site.yaml" <<YAML
name: gpuhost
vendor: nvidia
supernodes:
  - {name: sn0, nodes: "$H"}
node_defaults:
  devices: $N
  device_groups: [[$REV]]
links:
  node: {bandwidth_GBps: 450, latency_us: 2}
  supernode: {bandwidth_GBps: 450, latency_us: 2}
  inter: {bandwidth_GBps: 50, latency_us: 5}
slurm: {partition: gpu, strategy: features}
env_profiles:
  default: {NCCL_NVLS_ENABLE: "0", NCCL_MNNVL_ENABLE: "0", TORCH_NCCL_ASYNC_ERROR_HANDLING: "3"}
YAML
python3 - "$OUT" "$TP" "$FORK" <<'PY'
import sys
from pathlib import Path
from slurm_supernode.launch.job import plan_job, write_job_dir
from slurm_supernode.launch.jobspec import JobSpec
from slurm_supernode.placement.model import Layout
from slurm_supernode.site.loader import load_site
out, tp, fork = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
site = load_site(str(out / "site.yaml"))
spec = JobSpec(
    program="contrib/examples/check_ranks.py", layout=Layout(tp=tp), supernodes=1,
    fork_workers=fork,
)
plan = plan_job(spec, site, None, jobs_root=out / "jobs", token="gpu0")
write_job_dir(plan)
print(plan.job_dir)
PY
JOB_DIR=$(ls -d "$OUT"/jobs/*/)
nvidia-smi --query-gpu=index,pci.bus_id,name --format=csv,noheader >"$OUT/nvidia-smi.csv"
set -a; eval "$(python3 -c "
import json,sys; e=json.load(open('$JOB_DIR/env.json')); print('\n'.join(f'{k}={v!r}' for k,v in e.items()))")"; set +a
T0=$(date +%s.%N)
SLURM_JOB_NODELIST=$H SLURMD_NODENAME=$H SLURM_JOB_ID=1 SNRUN_JOB_DIR=$JOB_DIR \
  SNRUN_NODELIST=$H python3 -m slurm_supernode agent --job-dir "$JOB_DIR" \
  -- contrib/examples/check_ranks.py 2>&1 | grep -v -E "OMP_NUM|^\*+$" | tee "$OUT/agent.log"
echo "agent start -> all ranks done: $(python3 -c "import time; print(f'{time.time() - $T0:.1f}')") s"
python3 -c "
import json, glob; rec = json.load(open(sorted(glob.glob('$JOB_DIR/env/*.json'))[0]))
print('torchrun argv:', ' '.join(rec['argv'][1:]))"
python3 - "$JOB_DIR" "$OUT/nvidia-smi.csv" <<'PY'
import json, sys
res = json.load(open(f"{sys.argv[1]}/result.json"))
smi = {int(l.split(",")[0]): l.split(",")[1].strip().lower() for l in open(sys.argv[2]) if l.strip()}
ok = res["ok"]
for r in sorted(res["ranks"], key=lambda r: r["rank"]):
    want = smi[r["device"]].rsplit(".", 1)[0][-8:]  # nvidia-smi: domain:bus:device.function
    got = r["pci_bus"][-8:]  # torch: domain:bus:device
    match = want == got
    ok &= match
    print(f"rank {r['rank']} local {r['local_rank']} tp={r['coords']['tp']} -> GPU {r['device']} "
          f"cuda bus {r['pci_bus']} nvidia-smi bus {smi[r['device']]} {'OK' if match else 'MISMATCH'}")
print("AGENT NCCL CHECK:", "PASS" if ok else "FAIL", f"(backend {res['backend']}, all_reduce {res['all_reduce']})")
PY
