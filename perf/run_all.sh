#!/usr/bin/env bash
# `make bench`: every benchmark that runs on this machine; prints figures, asserts nothing.
# The cluster benchmarks run on each Slurm of BENCH_SLURM (default "host 24.11 25.11 26.05":
# 22.05 with topology/tree, 24.11 with topology/block, 25.11 (built from source, with pyslurm)
# and 26.05 with topology/block and expedited requeues
# (SlurmctldParameters=enable_expedited_requeue), side by side). A cluster that is not
# up is booted and taken down afterwards (one that was up stays up).
# BENCH_RESTART_ONLY=requeue,lost-node (say) runs only those scenarios of bench_restart.py;
# BENCH_CLUSTER_ONLY=1 skips the benchmarks that need no cluster; BENCH_PARTS (default
# "submit restart expedite failfast containers queries") picks the cluster benchmarks ("expedite":
# what Slurm does with --requeue and --requeue=expedite, bench_expedite.py, on 25.11 and 26.05). Every part prints
# the machine and its load average beside its figures (docs/benchmarks.md quotes them).
# BENCH_PARTS may also name "boot": `minicluster up`/`down` times of each version before its other
# parts (skipped for a cluster already up; bench_boot.py), "boot-scale" (not by default: the
# rack-scale shape of make test-scale, 144 slurmd, ~1 min per version), and "build" (not by default, ~5-15
# min each): the roots, Slurm 25.11 + pyslurm, pyxis + enroot and the container test image built
# from nothing into scratch (bench_build.sh).
# BENCH_CONTAINERS (default oci,pyxis,apptainer; empty: none) are the container runtimes the
# clusters boot with (minicluster up --containers; Apptainer only on the namespaced roots) for
# bench_containers.py.
set -euo pipefail
cd "$(dirname "$0")/.."
MC=contrib/minicluster/minicluster
PARTS=" ${BENCH_PARTS:-boot submit restart expedite failfast containers queries} "
stamp() { echo "# $(date -u '+%F %T UTC') on $(hostname), $(nproc) CPUs, $(uptime | sed 's/.*\(load average\)/\1/')"; }
after() { echo "# after: $(date -u '+%T UTC'), $(uptime | sed 's/.*\(load average\)/\1/')"; }
if [ "${BENCH_CLUSTER_ONLY:-0}" != 1 ]; then
  stamp
  echo "== site: load + validate a 100,000-device site";   python3 perf/bench_site.py
  echo; echo "== plan: rank map for 10k and 100k GPUs";    python3 perf/bench_plan.py
  echo; echo "== launch: dry run";                          python3 perf/bench_launch.py --runs 10 --dry-only --instructions
  echo; echo "== observe: what watching a job costs a step"; python3 perf/bench_observe.py --rounds 20 --block 40
  echo; echo "== observe: the HTML report of a long attempt"; python3 perf/bench_report.py --ranks 16 --steps 5000 50000
fi
if [[ $PARTS == *" build "* ]]; then
  echo; echo "== the test clusters' one-off builds, from nothing"
  stamp
  bash perf/bench_build.sh
fi
for v in ${BENCH_SLURM-host 24.11 25.11 26.05}; do  # BENCH_SLURM="": none
  topo=tree
  [ "$v" != host ] && [ "$v" != 22.05 ] && topo=block
  extra=()
  case $v in 25.11 | 26.05) extra=(--expedited-requeue) ;; esac  # Slurm >= 25.11 only
  if [[ $PARTS == *" boot "* ]]; then
    echo; echo "== Slurm $v ($topo): minicluster up / down from built roots"
    stamp
    python3 perf/bench_boot.py --slurm "$v" --repeat 3
  fi
  if [[ $PARTS == *" boot-scale "* ]]; then
    echo; echo "== Slurm $v ($topo): minicluster up / down, rack scale (8 x 18 trays)"
    stamp
    python3 perf/bench_boot.py --slurm "$v" --repeat 2 --scale
  fi
  booted=0
  bash "$MC" status --slurm "$v" >/dev/null 2>&1 || booted=1
  # container runtimes (bench_containers.py): the host's Slurm has no Apptainer, 25.11 none
  containers=${BENCH_CONTAINERS-oci,pyxis,apptainer}
  case $v in host | 22.05) containers=${containers//apptainer/} ;; 25.11) containers="" ;; esac
  containers=$(tr -s , <<<"$containers" | sed 's/^,//; s/,$//')
  [ -n "$containers" ] && extra+=("--containers=$containers")
  bash "$MC" up --slurm "$v" --topology "$topo" "${extra[@]}" >/dev/null
  # SLURM_CONF, and for a namespaced or source-built cluster the client wrappers first on PATH
  # (25.11: and its pyslurm on PYTHONPATH)
  SLURM_PREFIX="" PYSLURM_PATH=""
  eval "$(bash "$MC" env --slurm "$v" | sed -n 's/^\(SLURM_CONF\|CLIENTS\|NAMESPACED\|SLURM_PREFIX\|PYSLURM_PATH\)=/export \1=/p')"
  { [ "$NAMESPACED" = 1 ] || [ -n "$SLURM_PREFIX" ]; } && export PATH=$CLIENTS:$PATH
  saved_pythonpath=${PYTHONPATH:-}
  [ -n "$PYSLURM_PATH" ] && export PYTHONPATH=$PYSLURM_PATH${PYTHONPATH:+:$PYTHONPATH}
  export SNRUN_MC_SLURM=$v
  if [[ $PARTS == *" submit "* ]]; then
    echo; echo "== Slurm $(sinfo --version) ($topo${extra:+, ${extra[*]}}): submit-to-RUNNING"
    stamp
    python3 perf/bench_launch.py --submit-only --runs 6
  fi
  if [[ $PARTS == *" restart "* ]]; then
    echo; echo "== Slurm $(sinfo --version) ($topo${extra:+, ${extra[*]}}): restart, requeue, lost node"
    stamp
    python3 perf/bench_restart.py ${BENCH_RESTART_ONLY:+--only "$BENCH_RESTART_ONLY"}
    after
  fi
  if [[ $PARTS == *" expedite "* ]] && [ ${#extra[@]} -gt 0 ] && [ "${extra[0]}" = --expedited-requeue ]; then
    echo; echo "== Slurm $(sinfo --version) ($topo, ${extra[*]}): --requeue and --requeue=expedite, event by event"
    python3 perf/bench_expedite.py --repeat 3
  fi
  if [[ $PARTS == *" failfast "* ]]; then
    echo; echo "== Slurm $(sinfo --version) ($topo): one rank crashes -> the next attempt's first step"
    stamp
    python3 perf/bench_failfast.py --nodes 2 --nodes 8 --repeat 2
    after
  fi
  if [[ $PARTS == *" containers "* ]] && [ -n "$containers" ]; then
    echo; echo "== Slurm $(sinfo --version): job start in each container runtime vs bare ($containers)"
    stamp
    python3 perf/bench_containers.py --repeat 3
  fi
  if [[ $PARTS == *" queries "* ]]; then
    echo; echo "== Slurm $(sinfo --version): the Slurm layer's queries, pyslurm vs the command line"
    stamp
    python3 perf/bench_slurm_queries.py
  fi
  [ -n "$NAMESPACED$SLURM_PREFIX" ] && export PATH=${PATH#"$CLIENTS":}
  export PYTHONPATH=$saved_pythonpath
  if [ "$booted" = 1 ]; then bash "$MC" down --slurm "$v" >/dev/null; fi
done
echo; echo "(GPU figures: perf/results/h200x2.md, perf/results/agent-h200x2.md)"
