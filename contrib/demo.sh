#!/usr/bin/env bash
# The demo: boot the local cluster (2 super nodes x 4 nodes, real Slurm) and run a real
# multi-node torch job through snrun on two whole super nodes; print where each rank ran.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/sbin
bash contrib/minicluster/minicluster up
# The cluster's env.sh, as the user's shell gets it: SLURM_CONF, SNRUN_SITE (the cluster's
# site), SNRUN_JOBS_DIR and SNRUN_BENCH_DB (in its state dir): `snrun status <job>` after the
# demo finds the demo's job.
# shellcheck disable=SC1091
source /tmp/snrun-minicluster/env.sh

echo
echo "== snrun plan: which rank runs where (2 super nodes, tp=2)"
snrun plan --nodelist 'n[0-7]' --nproc-per-node 2 --tp 2 | head -n 24
echo
echo "== snrun --wait -S 2 --nproc-per-node 2 --tp 2 contrib/examples/check_ranks.py"
snrun --wait -S 2 --nproc-per-node 2 --tp 2 -J snrun-demo \
  contrib/examples/check_ranks.py "an argument with spaces" '$(not run)'
job=$(ls -t "$SNRUN_JOBS_DIR/by-id" | head -n1)
dir=$(readlink -f "$SNRUN_JOBS_DIR/by-id/$job")
echo
echo "== job $job: what the program printed (rank 0)"
# torchrun's --tee prefixes each line with [default<local rank>]:
sed -n 's/^\[default[0-9]*\]://; /^world size/,/placement/p' "$dir"/logs/slurm-*.out
echo "(full log, torchrun's messages included: $(ls "$dir"/logs/slurm-*.out))"
echo
echo "== snrun status $job"
snrun status "$job"
echo
echo "The cluster is still up: 'source /tmp/snrun-minicluster/env.sh', then sinfo, squeue,"
echo "snrun status $job, snrun logs $job --rank 0 ... work in your shell."
echo "Stop it with: make cluster-down"
