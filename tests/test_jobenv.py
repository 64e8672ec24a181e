"""JobEnvironment: the one reader of SLURM_*, torchrun and SNRUN_* variables."""

from __future__ import annotations

import pytest

from slurm_supernode.errors import JobError
from slurm_supernode.jobenv import JobEnvironment


def test_plain_job():
    env = JobEnvironment.from_environ(
        {"SLURM_JOB_ID": "12", "SLURM_JOB_NODELIST": "n[2-3]", "SLURM_RESTART_COUNT": "1"}
    )
    assert (env.job_id, env.restart_count, env.het_size) == (12, 1, 0)
    assert env.hosts() == ["n2", "n3"]


def test_het_job_is_the_union_of_its_components():
    env = JobEnvironment.from_environ(
        {
            "SLURM_HET_SIZE": "2",
            "SLURM_JOB_NODELIST": "n[0-3]",  # Slurm's first component only
            "SLURM_JOB_NODELIST_HET_GROUP_0": "n[4-7]",
            "SLURM_JOB_NODELIST_HET_GROUP_1": "n[0-3]",
        }
    )
    assert env.het_size == 2
    assert env.hosts() == [f"n{i}" for i in (4, 5, 6, 7, 0, 1, 2, 3)]
    with pytest.raises(JobError, match="SLURM_JOB_NODELIST_HET_GROUP_1 is not set"):
        JobEnvironment.from_environ({"SLURM_HET_SIZE": "2", "SLURM_JOB_NODELIST_HET_GROUP_0": "n0"})


def test_supervisor_nodelist_wins_and_outside_a_job_is_an_error():
    env = JobEnvironment.from_environ({"SNRUN_NODELIST": "n7", "SLURM_JOB_NODELIST": "n1"})
    assert env.hosts() == ["n7"]
    with pytest.raises(JobError, match="inside a Slurm job"):
        JobEnvironment.from_environ({}).hosts()
    with pytest.raises(JobError, match="bad node list"):
        JobEnvironment.from_environ({"SLURM_JOB_NODELIST": "n[1-"}).hosts()


def test_torchrun_and_snrun_variables():
    env = JobEnvironment.from_environ(
        {
            "RANK": "5",
            "LOCAL_RANK": "1",
            "WORLD_SIZE": "8",
            "GROUP_RANK": "2",
            "SNRUN_ATTEMPT": "3",
            "SNRUN_HANG_TIMEOUT": "30",
            "SNRUN_MAX_RESTARTS": "0",
            "SLURMD_NODENAME": "n9",
        }
    )
    assert (env.rank, env.local_rank, env.world_size, env.group_rank) == (5, 1, 8, 2)
    assert (env.attempt, env.hang_timeout, env.max_restarts) == (3, 30.0, 0)
    assert env.hostname() == "n9"


@pytest.mark.parametrize(
    ("name", "value"), [("SLURM_JOB_ID", "x"), ("RANK", "1.5"), ("SNRUN_HANG_TIMEOUT", "-1")]
)
def test_bad_values_are_one_line_errors(name, value):
    with pytest.raises(JobError, match=name) as err:
        JobEnvironment.from_environ({name: value})
    assert "\n" not in str(err.value)


def test_nothing_else_reads_slurm_or_torchrun_variables():
    """The runtime and the bench/health code ask JobEnvironment, not os.environ."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "slurm_supernode"
    pattern = re.compile(
        r"""\b(?:environ|env)(?:\.get\(|\[)\s*["']"""
        r"""(SLURM_(?!CONF)\w*|SLURMD_\w*|RANK|LOCAL_RANK|GROUP_RANK|WORLD_SIZE)["']"""
    )
    offenders = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if p.name != "jobenv.py" and pattern.search(p.read_text())
    ]
    assert offenders == []


def test_parse_seconds() -> None:
    from slurm_supernode.user_settings import parse_seconds

    assert parse_seconds("") is None
    assert parse_seconds(" 2.5 ") == 2.5
    for bad in ("-1", "nan", "soon"):
        with pytest.raises(ValueError, match="is not a number of seconds >= 0"):
            parse_seconds(bad)


def test_snrun_settings_read_once() -> None:
    from slurm_supernode.user_settings import SnrunSettings

    env = {"SNRUN_SITE": "lab", "SNRUN_JOBS_DIR": "", "SNRUN_DEBUG": "1"}
    settings = SnrunSettings.from_environ(env)
    assert (settings.site, settings.jobs_dir, settings.debug) == ("lab", None, True)
    assert SnrunSettings.from_environ({}) == SnrunSettings()
