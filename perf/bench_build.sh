#!/usr/bin/env bash
# How long the test clusters' one-off builds take from nothing (the figures the minicluster
# README, docs/containers.md and docs/pyslurm.md quote). Targets (default: all but pyslurm's
# own line, which the 25.11 build includes):
#   24.11 26.05  the Debian roots of Slurm 24.11 (trixie) and 26.05 (forky) with debootstrap
#                (Slurm, munge, slurmdbd + MariaDB; the container runtimes are added by
#                `up --containers`)
#   25.11        Slurm 25.11 + pyslurm from the vendored sources (build-slurm: its own lines
#                give each part's seconds)
#   pyxis        enroot + pyxis from ../shared/vendor against the host's Slurm (build-pyxis)
#   image        the container tests' image: the rootfs + its squashfs (build-image --squashfs)
#   pyslurm      only the pyslurm wheel against the cached Slurm 25.11 prefix, as a site builds
#                it (docs/pyslurm.md), with the build's peak memory
# Each is built into a scratch directory (SNRUN_MC_CACHE for the roots), never the one in use,
# and removed afterwards. Needs the Debian mirror (and ../shared/vendor for 25.11 and pyxis).
# Not in `make bench` by default (~5-15 min per Slurm build on 2 cores): BENCH_PARTS=build, or
# `bash perf/bench_build.sh pyxis image`.
set -euo pipefail
cd "$(dirname "$0")/.."
MC=contrib/minicluster/minicluster
MCDIR=contrib/minicluster
CACHE=${SNRUN_MC_CACHE:-/var/cache/snrun-minicluster}
VENDOR=${SNRUN_MC_VENDOR:-../shared/vendor}
load() { cut -d' ' -f1 /proc/loadavg; }
report() {  # NAME START SCRATCH
  printf '%-7s build from nothing: %5d s, %5s MB, load %s\n' "$1" $((SECONDS - $2)) \
    "$(du -sm "$3" | cut -f1)" "$(load)"
}
failed() { echo "$1 build failed: $(tail -n 3 "$2" | tr '\n' ' ')"; }
for target in ${@:-24.11 26.05 25.11 pyxis image}; do
  scratch=$(mktemp -d /var/tmp/snrun-bench-build.XXXXXX)
  log=$scratch.log
  start=$SECONDS
  case $target in
    pyxis)
      if bash "$MCDIR/build-pyxis" "$VENDOR" "$scratch/pyxis" >"$log" 2>&1; then
        report pyxis "$start" "$scratch"
      else failed pyxis "$log"; fi ;;
    image)
      if bash "$MCDIR/build-image" "$scratch/image" --squashfs >"$log" 2>&1; then
        report image "$start" "$scratch"
        printf '        rootfs %s MB, squashfs %s MB\n' "$(du -sm "$scratch/image" | cut -f1)" \
          "$(du -sm "$scratch/image.sqsh" | cut -f1)"
      else failed image "$log"; fi ;;
    pyslurm)
      prefix=$(ls -d "$CACHE"/slurm-25.11.* 2>/dev/null | grep -v -e pyslurm -e lock | head -n1)
      sdist=$(ls "$CACHE"/src/pyslurm-*.tar.gz 2>/dev/null | head -n1)
      if [ -z "$prefix" ] || [ -z "$sdist" ]; then
        echo "pyslurm: needs Slurm 25.11 and pyslurm's sdist in $CACHE (minicluster build --slurm 25.11)"
      elif python3 -m venv "$scratch/venv" >"$log" 2>&1 &&
        "$scratch/venv/bin/pip" install -q "Cython>=3,<3.4" "setuptools>=59.2" wheel packaging >>"$log" 2>&1 &&
        start=$SECONDS &&
        SLURM_INCLUDE_DIR=$prefix/include SLURM_LIB_DIR=$prefix/lib PYSLURM_BUILD_JOBS=$(nproc) \
          /usr/bin/time -f 'peak %M KB' -o "$scratch/time" \
          "$scratch/venv/bin/pip" wheel --no-build-isolation --no-deps -w "$scratch/wheel" "$sdist" >>"$log" 2>&1; then
        printf '%-7s wheel against %s: %5d s, build peak %s MB (one process), load %s\n' pyslurm \
          "$(basename "$prefix")" $((SECONDS - start)) "$(($(awk '{print $2}' "$scratch/time") / 1024))" "$(load)"
      else failed pyslurm "$log"; fi ;;
    *)
      if SNRUN_MC_CACHE=$scratch bash "$MC" build --slurm "$target" >"$log" 2>&1; then
        report "$target" "$start" "$scratch"
        grep -h -o 'built .* in [0-9]* s\|pyslurm .* ([0-9]* s)' "$log" | sed 's/^/        /' || true
      else failed "$target" "$log"; fi ;;
  esac
  rm -rf "$scratch" "$log"
done
