#!/usr/bin/env bash
# `make bench`: every benchmark that runs on this machine; prints figures, asserts nothing.
# The cluster benchmarks boot the local cluster if it is not up (it stays up afterwards).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== site: load + validate a 100,000-device site";   python3 bench/bench_site.py
echo; echo "== plan: rank map for 10k and 100k GPUs";    python3 bench/bench_plan.py
bash contrib/minicluster/minicluster up >/dev/null
export SLURM_CONF=/tmp/snrun-minicluster/etc/slurm.conf
echo; echo "== launch: dry run and submit-to-RUNNING";    python3 bench/bench_launch.py
echo; echo "== restart: crash to next attempt running";  python3 bench/bench_restart.py
echo; echo "(GPU figures: bench/results/h200x2.md, bench/results/agent-h200x2.md, bench/results/planner-h200x2.md)"
