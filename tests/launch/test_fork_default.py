"""--fork-workers is the default where it is safe; --no-fork-workers keeps spawned workers."""

from __future__ import annotations

import argparse

import pytest

from slurm_supernode.cli.submit import add_arguments, spec_from_args
from slurm_supernode.errors import InputError
from slurm_supernode.launch.job import fork_default
from slurm_supernode.launch.jobspec import JobSpec
from tests.launch.test_render import plan, site
from tests.placement.sites import ascend_site


def _spec(argv):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return spec_from_args(parser.parse_args(argv))


def test_scripts_fork_by_default_and_can_opt_out(tmp_path):
    assert _spec(["train.py"]).fork_workers is None  # the default, decided by the plan
    assert plan(tmp_path).inputs.fork_workers is True
    assert _spec(["--no-fork-workers", "train.py"]).fork_workers is False
    assert plan(tmp_path, fork_workers=False).inputs.fork_workers is False
    assert _spec(["--fork-workers", "train.py"]).fork_workers is True


def test_modules_and_ascend_sites_spawn_by_default(tmp_path):
    p = plan(tmp_path, program="pkg.train", module=True, program_args=())
    assert p.inputs.fork_workers is False
    asc = ascend_site()
    assert fork_default(JobSpec(program="train.py"), asc) is False
    assert fork_default(JobSpec(program="train.py"), site()) is True


def test_an_explicit_fork_of_a_module_is_refused(tmp_path):
    with pytest.raises(InputError, match="--fork-workers: forked workers are off for -m modules"):
        plan(tmp_path, program="pkg.train", module=True, fork_workers=True)
