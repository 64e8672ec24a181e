#!/usr/bin/env bash
# Issue 23's fail-fast figures on one Slurm: boots the minicluster, runs bench_failfast.py
# without and with two CPU burners (2 and 8 nodes), writes the raw output to
# perf/results/failfast/<version>-burn<N>.{txt,json} and tears the cluster down.
# Hold the cluster lock around it on a shared machine:
#   flock /tmp/snrun-cluster.lock bash perf/failfast_run.sh host tree
#   flock /tmp/snrun-cluster.lock bash perf/failfast_run.sh 24.11 block
#   flock /tmp/snrun-cluster.lock bash perf/failfast_run.sh 26.05 yaml --expedited-requeue
set -euo pipefail
cd "$(dirname "$0")/.."
v=$1 topo=$2
shift 2
MC=contrib/minicluster/minicluster
REPEAT=${REPEAT:-2}
bash "$MC" up --slurm "$v" --topology "$topo" "$@" >/dev/null
trap 'bash "$MC" down --slurm "$v" >/dev/null 2>&1 || true' EXIT
SLURM_PREFIX="" PYSLURM_PATH=""
eval "$(bash "$MC" env --slurm "$v" | sed -n 's/^\(SLURM_CONF\|CLIENTS\|NAMESPACED\|SLURM_PREFIX\|PYSLURM_PATH\)=/export \1=/p')"
{ [ "$NAMESPACED" = 1 ] || [ -n "$SLURM_PREFIX" ]; } && export PATH=$CLIENTS:$PATH
[ -n "$PYSLURM_PATH" ] && export PYTHONPATH=$PYSLURM_PATH${PYTHONPATH:+:$PYTHONPATH}
export SNRUN_MC_SLURM=$v
name=$(sinfo --version | awk '{print $2}' | cut -d. -f1-2)
out=perf/results/failfast
mkdir -p "$out"
for burn in 0 2; do
  {
    echo "# Slurm $(sinfo --version) ($topo${*:+, $*}), $burn CPU burners, $(date -u '+%F %T UTC')"
    echo "# $(hostname): $(nproc) CPUs, $(uptime)"
    python3 perf/bench_failfast.py --nodes 2 --nodes 8 --repeat "$REPEAT" --burn "$burn" \
      --json "$out/$name-burn$burn.json" || true
    echo "# after: $(uptime)"
  } 2>&1 | tee "$out/$name-burn$burn.txt"
done
