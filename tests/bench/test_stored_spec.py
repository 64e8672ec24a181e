"""The bench run a schedule stores: typed, versioned JSON; the old argv form read without
argparse; anything else refused with the reason."""

from __future__ import annotations

import json

import pytest

from slurm_supernode.bench import schedule as sch
from slurm_supernode.bench.stored_spec import (
    SpecError,
    spec_from_argv,
    spec_from_dict,
    spec_to_dict,
)
from slurm_supernode.bench.submit import BenchJob
from slurm_supernode.errors import InputError

FULL = BenchJob(supernodes="sn[0-1]", count=None, nproc_per_node=2, sizes="1K-1G",
                collectives="all_reduce", scopes="world", dtype="bfloat16", iters=9, warmup=1,
                backend="nccl", db="/r.sqlite", time="00:20:00", partition="p",
                profiles=("x", "y"), jobs_dir="/jobs", site_arg="lab")  # fmt: skip


@pytest.mark.parametrize("job", [FULL, BenchJob(site_arg="lab"), BenchJob(count=3, site_arg="lab")])
def test_round_trip_through_json(job):
    data = json.loads(json.dumps(spec_to_dict(job)))
    assert data["version"] == 1 and "site_arg" not in data and "job_name" not in data
    assert spec_from_dict(data, site="lab") == job


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"version": 2}, "spec version 2"),
        ({"version": None}, "spec version None"),
        ({"iters": "20"}, "iters is '20', not a whole number"),
        ({"count": True}, "count is True"),
        ({"sizes": 5}, "sizes is 5, not text"),
        ({"profiles": "x"}, "profiles is 'x'"),
        ({"backend": None}, "backend is null"),
        ({"argv": ["-S", "1"]}, "unknown spec field(s) argv"),
    ],
)
def test_unreadable_specs_say_why(change, why):
    with pytest.raises(SpecError) as err:
        spec_from_dict({**spec_to_dict(FULL), **change}, site="lab")
    assert why in str(err.value)


def test_old_argv_form_is_read_without_a_parser():
    argv = ["--supernodes", "sn0", "-S", "2", "--nproc-per-node", "1", "--sizes", "1M",
            "--profile", "a", "--env-profile", "b", "--jobs-dir", "/j", "--time", "5"]  # fmt: skip
    assert spec_from_argv(argv, site="s") == BenchJob(
        supernodes="sn0", count=2, nproc_per_node=1, sizes="1M", profiles=("a", "b"),
        jobs_dir="/j", time="5", site_arg="s",
    )  # fmt: skip
    assert spec_from_argv([], site="s") == BenchJob(site_arg="s")
    for bad, why in (
        (["--sizes"], "not flag, value pairs"),
        (["--iters", "many"], "--iters 'many' is not a whole number"),
        (["--sizes=1M", "-S"], "unknown option --sizes=1M"),
        (["--run-now", "x"], "unknown option --run-now"),
    ):
        with pytest.raises(SpecError, match=why):
            spec_from_argv(bad, site="s")


def test_a_registry_from_a_newer_snrun_is_refused(tmp_path):
    path = sch.registry_path(str(tmp_path))
    path.write_text(json.dumps({"version": 99, "schedules": []}))
    with pytest.raises(InputError, match="version 99, newer than this snrun"):
        sch.load_schedules(path)
