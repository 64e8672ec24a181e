#!/usr/bin/env bash
# How long the test clusters' one-off builds take from nothing (the figures the minicluster
# README quotes): the Debian roots of Slurm 24.11 (trixie) and 26.05 (forky) with debootstrap,
# (Slurm, munge, slurmdbd + MariaDB; the container runtimes are added by `up --containers`),
# and Slurm 25.11 + pyslurm from the vendored sources. Each is
# built into a scratch cache (SNRUN_MC_CACHE), never the one in use, and removed afterwards.
# Needs the Debian mirror (and ../shared/vendor for 25.11). Not in `make bench` by default
# (~5-15 min per build on 2 cores): BENCH_PARTS=build, or `bash bench/bench_build.sh 24.11`.
set -euo pipefail
cd "$(dirname "$0")/.."
MC=contrib/minicluster/minicluster
for version in ${@:-24.11 26.05 25.11}; do
  scratch=$(mktemp -d /var/tmp/snrun-bench-build.XXXXXX)
  start=$SECONDS
  if SNRUN_MC_CACHE=$scratch bash "$MC" build --slurm "$version" >"$scratch.log" 2>&1; then
    printf '%-6s build from nothing: %5d s, %5s MB in the cache, load %s\n' "$version" \
      $((SECONDS - start)) "$(du -sm "$scratch" | cut -f1)" "$(cut -d' ' -f1 /proc/loadavg)"
  else
    echo "$version build failed: $(tail -n 3 "$scratch.log" | tr '\n' ' ')"
  fi
  rm -rf "$scratch" "$scratch.log"
done
