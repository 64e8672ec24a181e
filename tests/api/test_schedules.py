"""Bench schedules from Python: the registry holds a typed, versioned spec; every run is
planned from it (chain and scrontab), old argv entries are migrated on read or refused in
one line, and the CLI only prints. Slurm calls are fakes (tests/integration has the real one)."""

from __future__ import annotations

import json
import shlex
from datetime import datetime

import pytest

from slurm_supernode.api import schedules
from slurm_supernode.bench import schedule as sch
from slurm_supernode.bench.submit import BenchJob
from slurm_supernode.cli.main import main
from slurm_supernode.errors import InputError
from tests.api.helpers import FakeSlurm, site_file

SPEC = BenchJob(supernodes="sn0", nproc_per_node=1, sizes="1K,1M", iters=3, warmup=0,
                backend="gloo", profiles=("gloo",))  # fmt: skip


def _registry(site: str):
    return schedules.registry_of(site)[1]


def _argv(plan) -> list[str]:
    return list(plan.spec.program_args)


def test_chain_install_stores_a_versioned_spec_and_plans_runs_from_it(tmp_path, monkeypatch):
    slurm = FakeSlurm(monkeypatch)
    site = site_file(tmp_path)
    done = schedules.install_schedule(
        BenchJob(**{**SPEC.__dict__, "site_arg": site}), "03:17", name="lab", mode="chain"
    )
    assert done.schedule.mode == "chain" and done.job_id == 101
    assert done.begin is not None and done.begin.strftime("%H:%M") == "03:17"
    assert done.begin > datetime.now()
    stored = json.loads(_registry(site).read_text())
    assert stored["version"] == sch.REGISTRY_VERSION
    (entry,) = stored["schedules"]
    assert "submit_args" not in entry and entry["site"] == site and entry["job_ids"] == [101]
    assert entry["spec"] == {
        "version": 1, "count": None, "nproc_per_node": 1, "iters": 3, "warmup": 0,
        "supernodes": "sn0", "sizes": "1K,1M", "collectives": "all", "scopes": "all",
        "dtype": "float32", "backend": "gloo", "db": None, "time": None, "partition": None,
        "jobs_dir": None, "profiles": ["gloo"],
    }  # fmt: skip
    (plan,) = slurm.plans
    argv = _argv(plan)
    assert argv[argv.index("--sizes") + 1] == "1K,1M" and argv[argv.index("--iters") + 1] == "3"
    assert plan.spec.job_name == "snrun-bench-nightly-lab"
    assert any(a.startswith("--begin=") and "T03:17:00" in a for a in plan.request.sbatch_args())
    assert ("SNRUN_BENCH_SCHEDULE", "lab") in plan.spec.env

    # the chained job's entry point: a successor already waits -> nothing submitted
    run = schedules.submit_next_run("lab", site=site)
    assert run.waiting == 101 and run.job_id is None and len(slurm.plans) == 1
    # once it ran, the next night's is planned from the stored spec, not from argv
    slurm.queue[0].pending = False
    run = schedules.submit_next_run("lab", site=site)
    assert run.job_id == 102 and run.begin is not None and run.begin.strftime("%H:%M") == "03:17"
    assert _argv(slurm.plans[1]) == argv
    assert sch.load_schedules(_registry(site))[0].job_ids == (101, 102)


def test_removed_schedule_stops_the_chain_and_remove_cancels_pending(tmp_path, monkeypatch):
    slurm = FakeSlurm(monkeypatch)
    site = site_file(tmp_path)
    schedules.install_schedule(BenchJob(site_arg=site), "01:00", name="x", mode="chain")
    gone = schedules.remove_schedule("x", site=site)
    assert gone.schedule.name == "x" and gone.cancelled == (101,) and slurm.cancelled == [101]
    run = schedules.submit_next_run("x", site=site)
    assert run.schedule is None and run.job_id is None and len(slurm.plans) == 1


def test_failed_first_submit_leaves_no_schedule(tmp_path, monkeypatch):
    from slurm_supernode.errors import SlurmError

    slurm = FakeSlurm(monkeypatch)
    slurm.fail_submit = SlurmError("sbatch: error: controller down")
    site = site_file(tmp_path)
    with pytest.raises(SlurmError):
        schedules.install_schedule(BenchJob(site_arg=site), "01:00", name="x", mode="chain")
    assert sch.load_schedules(_registry(site)) == []


def test_scrontab_entry_runs_the_entry_point_and_never_carries_options(tmp_path, monkeypatch):
    slurm = FakeSlurm(monkeypatch, has_scrontab=True)
    slurm.scrontab = "0 1 * * * /bin/true\n"
    site = site_file(tmp_path)
    done = schedules.install_schedule(
        BenchJob(sizes="1M", iters=7, site_arg=site), "02:05", name="night"
    )
    assert done.schedule.mode == "scrontab" and done.job_id is None and not slurm.plans
    cron = next(line for line in slurm.scrontab.splitlines() if line.startswith("5 2 "))
    command = shlex.split(cron.split(" ", 5)[5])
    assert command[command.index("&&") + 2 :] == [
        "-m", "slurm_supernode", "bench", "schedule", "--resubmit", "night", "--site", site,
    ]  # fmt: skip
    # at 02:05 the scron job submits tonight's bench at once, from the stored spec
    run = schedules.submit_next_run("night", site=site)
    (plan,) = slurm.plans
    assert run.job_id == 101 and run.begin is None
    assert not any(a.startswith("--begin") for a in plan.request.sbatch_args())
    argv = _argv(plan)
    assert argv[argv.index("--iters") + 1] == "7" and argv[argv.index("--sizes") + 1] == "1M"
    gone = schedules.remove_schedule("night", site=site)
    assert gone.cancelled == (101,) and slurm.scrontab == "0 1 * * * /bin/true\n"


def _old_registry(site: str, submit_args: list[str]) -> None:
    path = _registry(site)
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {
        "id": "abcd1234",
        "name": "old",
        "at": "04:30",
        "mode": "chain",
        "site": site,
        "submit_args": submit_args,
        "workdir": "/w",
        "created": 1.0,
        "job_ids": [7],
    }
    path.write_text(json.dumps({"version": 1, "schedules": [entry]}))  # fmt: skip


def test_old_argv_schedule_is_migrated_on_read(tmp_path, monkeypatch):
    slurm = FakeSlurm(monkeypatch)
    site = site_file(tmp_path)
    _old_registry(site, ["--supernodes", "sn1", "--sizes", "4K", "--iters", "2", "--profile",
                         "gloo", "--env-profile", "default", "--backend", "gloo"])  # fmt: skip
    (entry,) = sch.load_schedules(_registry(site))
    assert entry.spec == BenchJob(supernodes="sn1", sizes="4K", iters=2, backend="gloo",
                                  profiles=("gloo", "default"), site_arg=site)  # fmt: skip
    run = schedules.submit_next_run("old", site=site)
    assert run.job_id == 101
    argv = _argv(slurm.plans[0])
    assert argv[argv.index("--sizes") + 1] == "4K" and argv[argv.index("--iters") + 1] == "2"
    assert slurm.plans[0].spec.profiles == ("gloo", "default")
    # the rewrite (recording the job) stores the typed form
    (stored,) = json.loads(_registry(site).read_text())["schedules"]
    assert "submit_args" not in stored and stored["spec"]["sizes"] == "4K"
    assert stored["job_ids"] == [7, 101] and stored["workdir"] == "/w"


def test_old_schedule_that_cannot_be_migrated_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    slurm = FakeSlurm(monkeypatch)
    site = site_file(tmp_path)
    _old_registry(site, ["--sizes", "1M", "--bogus", "1"])
    (entry,) = sch.load_schedules(_registry(site))
    assert entry.spec is None and "unknown option --bogus" in entry.unreadable
    with pytest.raises(InputError, match="re-install it"):
        schedules.submit_next_run("old", site=site)
    assert not slurm.plans
    rc = main(["bench", "schedule", "--resubmit", "old", "--site", site])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and ": error: " in err[0] and "old form" in err[0]
    assert "(hint: re-install it: snrun bench schedule --remove old --site" in err[0]
    # --list still shows it (saying why), and --remove still removes it
    assert main(["bench", "schedule", "--list", "--site", site]) == 0
    assert "not readable: unknown option --bogus" in capsys.readouterr().out
    # a rewrite of the registry keeps the unreadable entry as it was stored
    schedules.install_schedule(BenchJob(site_arg=site), "01:00", name="new", mode="chain")
    old = json.loads(_registry(site).read_text())["schedules"][0]
    assert old["submit_args"] == ["--sizes", "1M", "--bogus", "1"] and "spec" not in old
    assert main(["bench", "schedule", "--remove", "old", "--site", site]) == 0
    assert [e.name for e in sch.load_schedules(_registry(site))] == ["new"]


def test_cli_list_json_shows_the_typed_spec(tmp_path, monkeypatch, capsys):
    FakeSlurm(monkeypatch)
    site = site_file(tmp_path)
    argv = ["bench", "schedule", "--nightly", "05:00", "--mode", "chain", "--name", "j",
            "--site", site, "--sizes", "2M", "-S", "1"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("Submitted batch job 101 (first run: ")
    assert main(["bench", "schedule", "--list", "--json", "--site", site]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["spec"]["sizes"] == "2M" and row["spec"]["count"] == 1
    assert row["jobs"] == [{"job_id": 101, "state": "PENDING", "start": None}]


def test_a_heterogeneous_job_is_listed_once_under_its_leader(tmp_path, monkeypatch, capsys):
    """`snrun -S 3` on a features site is one heterogeneous job of three components, which
    the controller lists as three records (HetJobId on each): the schedule has one job."""
    from types import SimpleNamespace

    from slurm_supernode.slurm.jobinfo import job_from_record

    slurm = FakeSlurm(monkeypatch)
    site = site_file(tmp_path)
    schedules.install_schedule(BenchJob(site_arg=site), "01:00", name="h", mode="chain")
    (leader,) = slurm.queue
    for offset in (1, 2):  # the components as scontrol -o prints them
        rec = job_from_record({"JobId": str(leader.job_id + offset), "JobName": leader.name,
                               "JobState": "PENDING", "HetJobId": str(leader.job_id),
                               "HetJobOffset": str(offset)})  # fmt: skip
        assert rec.het_component
        slurm.queue.append(SimpleNamespace(job_id=rec.job_id, name=rec.name, pending=True,
                                           state="PENDING", start_time=None,
                                           het_component=rec.het_component))  # fmt: skip
    first = job_from_record({"JobId": "101", "JobName": "x", "HetJobId": "101"})
    assert first.het_job_id == 101 and not first.het_component
    assert job_from_record({"JobId": "7", "JobName": "x"}).het_job_id is None
    _, rows = schedules.list_schedules(site=site)
    assert [q.job_id for q in rows[0].jobs] == [leader.job_id]
