#!/usr/bin/env bash
# The demo: boot the local cluster (2 super nodes x 4 nodes, real Slurm) and run a real
# multi-node torch job through snrun on two whole super nodes; print where each rank ran.
#
# Which cluster: the minicluster's own variables, as `minicluster up` reads them
# (SNRUN_MC_DIR, SNRUN_MC_CTLD_PORT, SNRUN_MC_SLURMD_PORT, SNRUN_MC_CACHE, the shape's
# SNRUN_MC_*; contrib/minicluster/README.md), and the Slurm version in SNRUN_SLURM (`make demo
# SLURM=24.11`; default: the host's). Everything after `up` talks to that cluster only: its
# env.sh is found through `minicluster env`, never at a fixed path.
# A cluster already up in that state dir with the same shape is reused as it is (its jobs
# and results stay; the demo's job is one more); one of another shape there is refused
# (`minicluster down` first); another cluster holding the ports is refused with the variables
# that move them. The cluster stays up after the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/sbin
slurm=${SNRUN_SLURM:-host}
mc=(bash contrib/minicluster/minicluster)
"${mc[@]}" up --slurm "$slurm"
# The cluster's env.sh, as the user's shell gets it: SLURM_CONF, SNRUN_SITE (the cluster's
# site), SNRUN_JOBS_DIR and SNRUN_BENCH_DB (in its state dir), the clients' wrappers of a
# namespaced cluster: `snrun status <job>` after the demo finds the demo's job.
state_dir=$("${mc[@]}" env --slurm "$slurm" | sed -n 's/^SNRUN_MC_DIR=//p')
[ -f "$state_dir/env.sh" ] || { echo "demo: no env.sh in $state_dir" >&2; exit 1; }
# shellcheck disable=SC1091
source "$state_dir/env.sh"
case $SLURM_CONF in
  "$state_dir"/*) ;;
  *) echo "demo: $state_dir/env.sh names another cluster ($SLURM_CONF)" >&2; exit 1 ;;
esac

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
down="contrib/minicluster/minicluster down --slurm $slurm"
[ -n "${SNRUN_MC_DIR:-}" ] && down="SNRUN_MC_DIR=$SNRUN_MC_DIR $down"
echo "The cluster is still up: 'source $state_dir/env.sh', then sinfo, squeue,"
echo "snrun status $job, snrun logs $job --rank 0 ... work in your shell."
echo "Stop it with: $down"
