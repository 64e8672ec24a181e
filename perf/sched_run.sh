#!/usr/bin/env bash
# `make bench-sched`: the scheduling-cost replays of bench_sched.py on the 144-node cluster
# (8 super nodes x 18 trays, 16 used + 2 spare, 4 GPUs each), one cluster per policy, each
# booted and torn down under the shared cluster lock, then the table and plot (sched_report.py).
#   plain      Slurm 22.05 (host), topology/tree: partition debug, which the plugin leaves alone
#   lua        the same cluster: partition main, where snrun's job_submit.lua enforces
#   lua-small  the same cluster, one-tray jobs in debug (unenforced), the rest in main
#   lua-aligned  the same cluster, every job in main, the plugin re-exported from the site with
#              `slurm.small_jobs: aligned` (slurmctld reloads job_submit.lua when it changes;
#              the shipped one is put back after the replay)
#   block      Slurm 24.11, topology/block (segments), no plugin
# The queue stays full: jobs arrive for SCHED_SPAN seconds (180) at SCHED_LOAD (1.5) times the
# cluster's capacity, each with its user's time limit (backfill plans with it), and the replay
# is cut SCHED_BUDGET seconds (240) after it began: the busy-cluster figures leave the drain
# out anyway. One replay per seed of SCHED_SEEDS ("1 2 3") and mode, results in
# $OUT/seed-S/. SCHED_MODES picks some ("plain lua"). SCHED_SPAN= (empty) replays the
# first benchmark's fixed mix instead: SCHED_JOBS jobs (200) spread at SCHED_LOAD.
# The clusters' scheduler: sched/backfill with bf_interval=1,sched_interval=2 (the
# minicluster's slurm.conf: Slurm's default bf_interval of 30 s is long for jobs of seconds),
# as `scontrol show config` reports it into every summary; SCHED_PARAMETERS=... replaces them.
set -euo pipefail
cd "$(dirname "$0")/.."
MC=contrib/minicluster/minicluster
OUT=${SCHED_OUT:-perf/results/sched}
SPAN=${SCHED_SPAN-180}
BUDGET=${SCHED_BUDGET-240}
[ -n "$SPAN" ] || BUDGET=${SCHED_BUDGET:-}
export SCHED_SEEDS=${SCHED_SEEDS:-1 2 3} SCHED_LOAD=${SCHED_LOAD:-1.5} SPAN BUDGET
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export SNRUN_MC_SUPERNODES=8 SNRUN_MC_NODES_PER_SUPERNODE=18 SNRUN_MC_SPARES=2 SNRUN_MC_GPUS=4
export SNRUN_MC_TIMEOUT=120
mkdir -p "$OUT"

replay() {  # replay SLURM TOPOLOGY LUA MODE...
  local v=$1 topo=$2 lua=$3
  shift 3
  flock /tmp/snrun-cluster.lock bash -c '
    set -euo pipefail
    v=$1 topo=$2 lua=$3 out=$4; shift 4
    MC=contrib/minicluster/minicluster
    trap "bash $MC down --slurm $v >/dev/null 2>&1 || true" EXIT
    # sed reads all of it: head would exit after one line and up, writing the next ones, die
    # of SIGPIPE (pipefail: the replay ended there, silently, when that race was lost)
    SNRUN_MC_JOB_SUBMIT_LUA=$lua bash $MC up --slurm "$v" --topology "$topo" | sed -n 1p
    eval "$(bash $MC env --slurm "$v" | sed -n "s/^\(SLURM_CONF\|CLIENTS\|NAMESPACED\)=/export \1=/p")"
    [ "$NAMESPACED" = 1 ] && export PATH=$CLIENTS:$PATH
    etc=$(dirname "$SLURM_CONF")
    if [ -n "${SCHED_PARAMETERS:-}" ]; then  # another SchedulerParameters for this cluster
      sed -i "s/^SchedulerParameters=.*/SchedulerParameters=$SCHED_PARAMETERS/" "$SLURM_CONF"
      scontrol reconfigure
    fi
    plugin() {  # plugin SITE: job_submit.lua from SITE (written atomically; slurmctld reloads it)
      python3 -m slurm_supernode site export "$1" --format job-submit-lua -o "$etc/job_submit.lua"
    }
    for seed in $SCHED_SEEDS; do
    for mode in "$@"; do
      echo "== $mode seed $seed on Slurm $v ($topo), $(date -u +%T)," \
        "load $(cut -d" " -f1-3 /proc/loadavg)"
      if [ "$mode" = lua-aligned ]; then
        # the site states small_jobs (local.yaml: whole) or not: replace it, else add it
        sed "/^  small_jobs:/d; s/^slurm:\$/slurm:\n  small_jobs: aligned/" "$etc/site.yaml" \
          >"$etc/site-aligned.yaml"
        plugin "$etc/site-aligned.yaml"
      fi
      nice python3 perf/bench_sched.py --mode "$mode" --out "$out/seed-$seed" \
        --load "$SCHED_LOAD" --seed "$seed" ${SPAN:+--span "$SPAN"} \
        --jobs "${SCHED_JOBS:-200}" ${BUDGET:+--budget "$BUDGET"}
      if [ "$mode" = lua-aligned ]; then plugin "$etc/site.yaml"; fi
    done
    done
  ' replay "$v" "$topo" "$lua" "$OUT" "$@"
}

modes=" ${SCHED_MODES:-plain lua lua-small lua-aligned block} "
tree_modes=()
for m in plain lua lua-small lua-aligned; do [[ $modes == *" $m "* ]] && tree_modes+=("$m"); done
[ ${#tree_modes[@]} -gt 0 ] && replay host tree 1 "${tree_modes[@]}"
[[ $modes == *" block "* ]] && { bash "$MC" build --slurm 24.11 >/dev/null; replay 24.11 block 0 block; }
python3 perf/sched_report.py "$OUT"
