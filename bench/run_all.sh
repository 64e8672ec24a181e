#!/usr/bin/env bash
# `make bench`: every benchmark that runs on this machine; prints figures, asserts nothing.
# The cluster benchmarks run on each Slurm of BENCH_SLURM (default "host 24.11": 22.05 with
# topology/tree and 24.11 with topology/block, side by side; "26.05" works too). A cluster that
# is not up is booted and stays up afterwards (`make cluster-down SLURM=...` stops it).
# BENCH_RESTART_ONLY=requeue,lost-node (say) runs only those scenarios of bench_restart.py.
set -euo pipefail
cd "$(dirname "$0")/.."
MC=contrib/minicluster/minicluster
echo "== site: load + validate a 100,000-device site";   python3 bench/bench_site.py
echo; echo "== plan: rank map for 10k and 100k GPUs";    python3 bench/bench_plan.py
echo; echo "== launch: dry run";                          python3 bench/bench_launch.py --runs 10 --dry-only
for v in ${BENCH_SLURM:-host 24.11}; do
  topo=tree
  [ "$v" != host ] && [ "$v" != 22.05 ] && topo=block
  bash "$MC" up --slurm "$v" --topology "$topo" >/dev/null
  # SLURM_CONF, and for a namespaced cluster the client wrappers first on PATH
  eval "$(bash "$MC" env --slurm "$v" | sed -n 's/^\(SLURM_CONF\|CLIENTS\|NAMESPACED\)=/export \1=/p')"
  [ "$NAMESPACED" = 1 ] && export PATH=$CLIENTS:$PATH
  export SNRUN_MC_SLURM=$v
  echo; echo "== Slurm $(sinfo --version) ($topo): submit-to-RUNNING"
  python3 bench/bench_launch.py --submit-only --runs 6
  echo; echo "== Slurm $(sinfo --version) ($topo): restart, requeue, lost node"
  python3 bench/bench_restart.py ${BENCH_RESTART_ONLY:+--only "$BENCH_RESTART_ONLY"}
done
echo; echo "(GPU figures: bench/results/h200x2.md, bench/results/agent-h200x2.md)"
