# slurm-supernode: the two commands of the README are `make demo` and `make test`.
PYTHON ?= python3
export PATH := $(PATH):/usr/sbin:/sbin
export PIP_DISABLE_PIP_VERSION_CHECK=1

.PHONY: install demo test integration-host integration-24.11 unit-stage test-slurm test-scale bench-sched lint format unit integration roots bench cluster-up cluster-down clean

# Integration runs: which Slurm (host = this machine's, 22.05 on Debian 12; 24.11 and 26.05 run
# from Debian roots in namespaces; 25.11 is built from source with pyslurm, see
# contrib/minicluster/README.md) and which topology.
SLURM ?= host
TOPOLOGY ?= tree
# EXPEDITE=1: SlurmctldParameters=enable_expedited_requeue (Slurm >= 25.11: 26.05 here)
EXPEDITE ?= 0
# ACCOUNTING=1: slurmdbd + MariaDB in a 24.11/26.05 cluster (sacct --json); ~6 s more boot
ACCOUNTING ?= 0
MC := bash contrib/minicluster/minicluster

install:  ## apt (Slurm, munge, debootstrap) + pip (the package, dev tools, CPU torch); idempotent
	bash contrib/install-deps.sh

demo: install  ## boot the local cluster and run a real 2-super-node job through snrun
	SNRUN_SLURM=$(SLURM) bash contrib/demo.sh

lint:
	ruff check slurm_supernode tests perf contrib
	ruff format --check slurm_supernode tests perf contrib
	lint-imports  # layer contracts: .importlinter
	mypy  # types: [tool.mypy] in pyproject.toml (strict on api/, slurm/, placement/, runtime/, chain/, launch/)
	$(PYTHON) contrib/lint/module_size.py  # one idea per file: at most 450 lines, named exceptions

format:
	ruff format slurm_supernode tests perf contrib
	ruff check --fix slurm_supernode tests perf contrib

unit:
	$(PYTHON) -m pytest -q -m "not slurm" -n auto

roots:  ## build (once) the Debian roots of Slurm 24.11 (trixie) and 26.05 (forky), and 25.11 + pyslurm from source
	$(MC) build --slurm 24.11
	$(MC) build --slurm 26.05
	$(MC) build --slurm 25.11

# Each cluster's tests get their own pytest temp dir, so runs on two clusters at once (make
# test) never clean up each other's.
integration:  ## the slurm-marked tests on one cluster: make integration SLURM=24.11 TOPOLOGY=block
	SNRUN_SLURM=$(SLURM) SNRUN_TOPOLOGY=$(TOPOLOGY) SNRUN_MC_EXPEDITED_REQUEUE=$(EXPEDITE) \
	  SNRUN_MC_ACCOUNTING=$(ACCOUNTING) \
	  $(PYTHON) -m pytest -q -m "slurm and not scale" -p no:cacheprovider --durations=12 \
	  --basetemp=/tmp/snrun-tests-$(SLURM)

# What CI runs: lint, then the unit tests and the integration tests on 22.05 (tree) and on
# 24.11 (block, with slurmdbd accounting), all three side by side. The two clusters share
# nothing: 24.11 runs in its own namespaces (network, PIDs, mounts), each has its own state dir
# and temp dir. Most of an integration test's time is spent waiting on Slurm and torchrun, not
# computing, so the stages together take little more than the longest one (the 24.11 stage:
# 25-28 min on 2 cores; the unit tests, 3 min alone, ran before the clusters until 2026-12-02
# and made `make test` 32-33 min); the tests wait on what Slurm reports, so the load of the
# other stages is one more load they must stand (issue #23). Each stage's output is printed
# whole when it ends (--output-sync); `--durations` names the slowest tests of each cluster.
test: install lint
	$(MC) build --slurm 24.11
	$(MAKE) --no-print-directory -j3 --output-sync=target unit-stage integration-host integration-24.11

unit-stage:
	@echo "== unit tests"
	$(MAKE) --no-print-directory unit

integration-host:
	@echo "== integration: Slurm 22.05 (host), topology/tree"
	$(MAKE) --no-print-directory integration SLURM=host TOPOLOGY=tree

integration-24.11:
	@echo "== integration: Slurm 24.11 (Debian trixie root), topology/block, accounting"
	$(MAKE) --no-print-directory integration SLURM=24.11 TOPOLOGY=block ACCOUNTING=1

# The newest Slurm: 26.05 (Debian forky) with topology.yaml (blocks as the cluster default) and
# expedited requeues enabled and slurmdbd accounting; then 25.11 built from source, where the
# Slurm layer's queries go through pyslurm (docs/pyslurm.md). The first run builds Slurm 25.11
# and the pyslurm wheel once (perf/bench_build.sh 25.11 times it), cached under /var/cache/snrun-minicluster.
test-slurm: install
	$(MC) build --slurm 26.05
	$(MAKE) --no-print-directory integration SLURM=26.05 TOPOLOGY=yaml EXPEDITE=1 ACCOUNTING=1
	$(MC) build --slurm 25.11
	$(MAKE) --no-print-directory integration SLURM=25.11 TOPOLOGY=block EXPEDITE=1

# Rack scale (not in make test: ~10 min per version on 2 cores): 8 super nodes x 18 trays
# (16 used + 2 spare, 4 GPUs each) with job_submit.lua, on 22.05/tree and 24.11/block (and on
# 26.05/yaml where its root is built: make test-scale SCALE_VERSIONS="host:tree 26.05:yaml").
SCALE_VERSIONS ?= host:tree 24.11:block
SCALE_SHAPE := SNRUN_MC_SUPERNODES=8 SNRUN_MC_NODES_PER_SUPERNODE=18 SNRUN_MC_SPARES=2 \
  SNRUN_MC_GPUS=4 SNRUN_MC_JOB_SUBMIT_LUA=1 SNRUN_MC_TIMEOUT=120
test-scale: install
	@for vt in $(SCALE_VERSIONS); do \
	  v=$${vt%%:*}; t=$${vt#*:}; \
	  [ "$$v" = host ] || $(MC) build --slurm $$v || exit 1; \
	  echo "== test-scale: Slurm $$v, topology $$t"; \
	  $(SCALE_SHAPE) SNRUN_SLURM=$$v SNRUN_TOPOLOGY=$$t \
	    $(PYTHON) -m pytest -q -m scale tests/integration/scale || exit 1; \
	done

bench: install
	bash perf/run_all.sh

# What whole super nodes cost a busy scheduler (not CI; 5 policies x 3 seeds x ~5 min on 2
# cores): a Helios-fitted job mix arriving above capacity (the queue stays full), with user time
# limits for backfill, through Slurm under plain tree, block segments and job_submit.lua's modes;
# table + plot in perf/results/sched (docs/benchmarks.md). SCHED_MODES="plain lua", SCHED_SEEDS="1".
bench-sched: install
	bash perf/sched_run.sh

cluster-up:
	SNRUN_MC_EXPEDITED_REQUEUE=$(EXPEDITE) SNRUN_MC_ACCOUNTING=$(ACCOUNTING) $(MC) up --slurm $(SLURM) --topology $(TOPOLOGY)

cluster-down:
	$(MC) down --slurm $(SLURM)

clean:
	rm -rf build dist *.egg-info .pytest_cache .ruff_cache .mypy_cache
