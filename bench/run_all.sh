#!/usr/bin/env bash
# `make bench`: every benchmark that runs on this machine; prints figures, asserts nothing.
# The cluster benchmarks run on each Slurm of BENCH_SLURM (default "host 24.11 25.11 26.05":
# 22.05 with topology/tree, 24.11 with topology/block, 25.11 (built from source, with pyslurm)
# and 26.05 with topology/block and expedited requeues
# (SlurmctldParameters=enable_expedited_requeue), side by side). A cluster that is not
# up is booted and stays up afterwards (`make cluster-down SLURM=...` stops it).
# BENCH_RESTART_ONLY=requeue,lost-node (say) runs only those scenarios of bench_restart.py;
# BENCH_CLUSTER_ONLY=1 skips the benchmarks that need no cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
MC=contrib/minicluster/minicluster
if [ "${BENCH_CLUSTER_ONLY:-0}" != 1 ]; then
  echo "== site: load + validate a 100,000-device site";   python3 bench/bench_site.py
  echo; echo "== plan: rank map for 10k and 100k GPUs";    python3 bench/bench_plan.py
  echo; echo "== launch: dry run";                          python3 bench/bench_launch.py --runs 10 --dry-only
fi
for v in ${BENCH_SLURM:-host 24.11 25.11 26.05}; do
  topo=tree
  [ "$v" != host ] && [ "$v" != 22.05 ] && topo=block
  extra=()
  case $v in 25.11 | 26.05) extra=(--expedited-requeue) ;; esac  # Slurm >= 25.11 only
  bash "$MC" up --slurm "$v" --topology "$topo" "${extra[@]}" >/dev/null
  # SLURM_CONF, and for a namespaced or source-built cluster the client wrappers first on PATH
  # (25.11: and its pyslurm on PYTHONPATH)
  SLURM_PREFIX="" PYSLURM_PATH=""
  eval "$(bash "$MC" env --slurm "$v" | sed -n 's/^\(SLURM_CONF\|CLIENTS\|NAMESPACED\|SLURM_PREFIX\|PYSLURM_PATH\)=/export \1=/p')"
  { [ "$NAMESPACED" = 1 ] || [ -n "$SLURM_PREFIX" ]; } && export PATH=$CLIENTS:$PATH
  saved_pythonpath=${PYTHONPATH:-}
  [ -n "$PYSLURM_PATH" ] && export PYTHONPATH=$PYSLURM_PATH${PYTHONPATH:+:$PYTHONPATH}
  export SNRUN_MC_SLURM=$v
  echo; echo "== Slurm $(sinfo --version) ($topo${extra:+, ${extra[*]}}): submit-to-RUNNING"
  echo "# $(date -u '+%F %T UTC') on $(hostname), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 bench/bench_launch.py --submit-only --runs 6
  echo; echo "== Slurm $(sinfo --version) ($topo${extra:+, ${extra[*]}}): restart, requeue, lost node"
  echo "# $(date -u '+%F %T UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 bench/bench_restart.py ${BENCH_RESTART_ONLY:+--only "$BENCH_RESTART_ONLY"}
  echo; echo "== Slurm $(sinfo --version) ($topo): one rank crashes -> the next attempt's first step"
  echo "# $(date -u '+%F %T UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 bench/bench_failfast.py --nodes 2 --nodes 8 --repeat 2
  echo; echo "== Slurm $(sinfo --version): the Slurm layer's queries, pyslurm vs the command line"
  python3 bench/bench_slurm_queries.py
  [ -n "$NAMESPACED$SLURM_PREFIX" ] && export PATH=${PATH#"$CLIENTS":}
  export PYTHONPATH=$saved_pythonpath
done
echo; echo "(GPU figures: bench/results/h200x2.md, bench/results/agent-h200x2.md)"
