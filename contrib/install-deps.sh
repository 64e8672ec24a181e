#!/usr/bin/env bash
# Install what snrun, its tests and the local cluster need. Idempotent; Debian, as root.
set -euo pipefail
# Slurm and munge daemons live in /usr/sbin, which a non-login shell may not have on PATH.
export PATH=$PATH:/usr/sbin:/sbin
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if [ "$(id -u)" != 0 ]; then
  echo "install-deps: run as root (apt-get installs Slurm and munge)" >&2
  exit 1
fi
# debootstrap, unshare/nsenter (util-linux) and ip (iproute2): the Slurm 24.11/26.05 clusters
# (contrib/minicluster/build-root; their roots are built by `make test`, once).
need=""
# valgrind: perf/bench_launch.py counts the dry run's instructions (make bench), which the
# machine's load does not move.
# runc: Slurm's OCI container support on the test cluster (minicluster up --containers); the
# rest builds and runs pyxis + enroot from ../shared/vendor (contrib/minicluster/build-pyxis).
# sshd + ssh: `snrun --cluster` is tested against Debian's OpenSSH server (tests/sshd.py).
# prometheus-pushgateway: the observe push is tested against a real one (tests/observe/).
for c in slurmctld munged sbatch lua5.1 lua5.3 debootstrap ip nsenter pgrep runc mksquashfs squashfuse \
  makeself jq ssh sshd valgrind prometheus-pushgateway; do
  command -v "$c" >/dev/null || need=1
done
if [ -n "$need" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends slurm-wlm munge lua5.1 lua5.3 debootstrap iproute2 \
    util-linux procps runc squashfs-tools squashfuse fuse3 libslurm-dev makeself libbsd-dev jq \
    parallel pigz openssh-server openssh-client valgrind prometheus-pushgateway >/dev/null
fi
# CPU torch: 'torch==2.13.0' resolves to the CPU wheel kept on disk here (no multi-GB download).
"$PY" -m pip install -q torch==2.13.0
"$PY" -m pip install -q -e ".[dev,torch,bench]"  # py-spy (hung ranks), matplotlib (bench plots)
