# slurm-supernode: the two commands of the README are `make demo` and `make test`.
PYTHON ?= python3
export PATH := $(PATH):/usr/sbin:/sbin
export PIP_DISABLE_PIP_VERSION_CHECK=1

.PHONY: install demo test lint format unit integration bench cluster-up cluster-down clean

install:  ## apt (Slurm, munge) + pip (the package, dev tools, CPU torch); idempotent
	bash contrib/install-deps.sh

demo: install  ## boot the local cluster and run a real 2-super-node job through snrun
	bash contrib/demo.sh

lint:
	ruff check slurm_supernode tests bench contrib
	ruff format --check slurm_supernode tests bench contrib

format:
	ruff format slurm_supernode tests bench contrib
	ruff check --fix slurm_supernode tests bench contrib

unit:
	$(PYTHON) -m pytest -q -m "not slurm"

integration:
	$(PYTHON) -m pytest -q -m slurm

test: install lint  ## lint + the whole suite (unit + real-cluster integration tests)
	$(PYTHON) -m pytest -q

bench: install
	bash bench/run_all.sh

cluster-up:
	bash contrib/minicluster/minicluster up

cluster-down:
	bash contrib/minicluster/minicluster down

clean:
	rm -rf build dist *.egg-info .pytest_cache .ruff_cache
