"""Nightly schedules: next start time, the registry, scrontab text, the bench job plan."""

from __future__ import annotations

import shlex
import subprocess
import sys
import threading
from datetime import datetime
from pathlib import Path

import pytest

from slurm_supernode.bench import schedule as sch
from slurm_supernode.bench.submit import BenchJob, plan_bench
from slurm_supernode.errors import InputError
from slurm_supernode.site.loader import load_site

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("now", "at", "expected"),
    [
        ("2026-03-10 01:00:00", "02:30", "2026-03-10 02:30:00"),  # later today
        ("2026-03-10 02:30:00", "02:30", "2026-03-11 02:30:00"),  # exactly now: tomorrow
        ("2026-03-10 23:59:30", "00:00", "2026-03-11 00:00:00"),
        ("2026-12-31 03:00:00", "02:00", "2027-01-01 02:00:00"),  # year end
        ("2028-02-28 05:00:00", "04:00", "2028-02-29 04:00:00"),  # leap day
    ],
)
def test_next_run_is_strictly_after_now(now, at, expected):
    fmt = "%Y-%m-%d %H:%M:%S"
    got = sch.next_run(datetime.strptime(now, fmt), *sch.parse_hhmm(at))
    assert got == datetime.strptime(expected, fmt)
    assert sch.begin_arg(got) == "--begin=" + expected.replace(" ", "T")


@pytest.mark.parametrize("bad", ["24:00", "2:3", "12:60", "noon", "", "1230"])
def test_bad_time_of_day(bad):
    with pytest.raises(InputError) as err:
        sch.parse_hhmm(bad)
    assert err.value.where == "--nightly"


def test_registry_add_find_remove_and_damage(tmp_path):
    path = sch.registry_path(str(tmp_path / "state"))
    a = sch.new_schedule("lab", "02:00", "chain", "local", BenchJob(sizes="1M"), "/w", now=1.0)
    b = sch.new_schedule("lab2", "03:00", "scrontab", "local", BenchJob(), "/w", now=2.0)
    sch.update_schedules(path, lambda es: sch.add_schedule(es, a))
    sch.update_schedules(path, lambda es: sch.add_schedule(es, b))
    with pytest.raises(InputError, match="exists already"):
        sch.update_schedules(path, lambda es: sch.add_schedule(es, a))
    entries = sch.load_schedules(path)
    assert entries == [a, b] and entries[0].job_name == "snrun-bench-nightly-lab"
    assert sch.find_schedule(entries, a.id) == a
    assert sch.find_schedule(entries, b.id[:5]) == b
    entries = sch.update_schedules(path, lambda es: sch.record_job(es, "lab", 41))
    assert entries[0].job_ids == (41,) and entries[1].job_ids == ()
    rest, gone = sch.remove_schedule(sch.load_schedules(path), "lab")
    assert gone.id == a.id and [e.name for e in rest] == ["lab2"]
    with pytest.raises(InputError, match="no bench schedule"):
        sch.remove_schedule(rest, "nope")
    assert not list(path.parent.glob(".bench-schedules.json.*"))  # no temp files left
    path.write_text("{not json")
    with pytest.raises(InputError, match="damaged"):
        sch.load_schedules(path)
    with pytest.raises(InputError):
        sch.check_name("bad name; rm -rf")


def test_concurrent_registry_updates_lose_nothing(tmp_path):
    path = sch.registry_path(str(tmp_path))

    def add(i: int) -> None:
        e = sch.new_schedule(f"s{i}", "01:00", "chain", "local", BenchJob(), "/w")
        sch.update_schedules(path, lambda es: sch.add_schedule(es, e))

    threads = [threading.Thread(target=add, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(e.name for e in sch.load_schedules(path)) == sorted(f"s{i}" for i in range(12))


def test_scrontab_block_round_trip_keeps_other_lines():
    entry = sch.new_schedule("lab", "02:05", "scrontab", "/etc/s it.yaml", BenchJob(), "/w d")
    cmd = ["python3", "-m", "slurm_supernode", "bench", "submit", "--site", entry.site]
    block = sch.scron_block(entry, cmd, ["--time=00:10:00"])
    lines = block.splitlines()
    assert lines[1] == "#SCRON --job-name=snrun-bench-nightly-lab"
    assert lines[2] == "#SCRON --time=00:10:00"
    cron = lines[3].split(" ", 5)
    assert cron[:5] == ["5", "2", "*", "*", "*"]
    # the command survives the shell: quoted site path with a space
    assert shlex.split(cron[5]) == ["cd", "/w d", "&&", *cmd]
    mine = "# my own job\n#SCRON -p debug\n0 1 * * * /bin/true"
    text = sch.add_scron(mine, block)
    assert sch.scron_names(text) == ["lab"]
    assert sch.remove_scron(text, "lab") == mine + "\n"
    assert sch.remove_scron(text, "other") == text


def _local():
    return load_site(str(ROOT / "site-configs" / "local.yaml"))


def test_bench_plan_named_supernodes_schedule_and_begin(tmp_path):
    site = _local()
    job = BenchJob(supernodes="sn1", nproc_per_node=1, sizes="1K,64K", collectives="all_reduce",
                   db=str(tmp_path / "r.sqlite"), begin="2030-01-01T02:00:00", schedule="lab",
                   site_arg="local", job_name="snrun-bench-nightly-lab")  # fmt: skip
    plan = plan_bench(site, job, jobs_root=tmp_path, stamp=0, token="t")
    args = plan.request.sbatch_args()
    assert "--begin=2030-01-01T02:00:00" in args and "--no-requeue" in args
    assert "--constraint=[sn1]" in args and plan.request.nodes == 4
    assert "--job-name=snrun-bench-nightly-lab" in args
    argv = plan.agent_inputs["program_argv"]
    assert argv[:4] == ["-m", "slurm_supernode", "bench", "run"]
    assert argv[argv.index("--db") + 1] == str(tmp_path / "r.sqlite")
    assert argv[argv.index("--sizes") + 1] == "1K,64K"
    assert "export SNRUN_BENCH_SCHEDULE=lab" in plan.script
    assert "bench schedule --resubmit" in plan.script
    both = plan_bench(site, BenchJob(), jobs_root=tmp_path)
    assert both.request.nodes == 8 and both.request.heterogeneous
    assert "SNRUN_BENCH_SCHEDULE=" not in both.script  # a plain submit does not chain
    with pytest.raises(InputError, match="no super node sn7"):
        plan_bench(site, BenchJob(supernodes="sn7"), jobs_root=tmp_path)
    with pytest.raises(InputError):
        plan_bench(site, BenchJob(sizes="1Q"), jobs_root=tmp_path)


@pytest.mark.parametrize("strategy", ["block", "switches"])
def test_bench_on_named_supernodes_pins_nodelist_not_segment(tmp_path, strategy):
    """Slurm 24.11 refuses --segment with a --nodelist spanning blocks: the named super nodes'
    exact hosts are the request, without --segment/--switches."""
    from slurm_supernode.launch.request import ClusterFacts

    text = (ROOT / "site-configs" / "local.yaml").read_text()
    path = tmp_path / "s.yaml"
    path.write_text(text.replace("strategy: auto", f"strategy: {strategy}"))
    site = load_site(str(path))
    assert site.slurm.strategy == strategy
    plugin = "topology/block" if strategy == "block" else "topology/tree"
    facts = ClusterFacts(
        version=(24, 11, 5), topology_plugin=plugin, supports_segment=True, has_block=True
    )
    plan = plan_bench(site, BenchJob(supernodes="sn[0-1]"), facts, jobs_root=tmp_path)
    args = plan.request.sbatch_args()
    assert not plan.request.heterogeneous and plan.request.strategy == strategy
    assert "--nodelist=n[0-7]" in args and "--nodes=8" in args
    assert not any(a.startswith(("--segment", "--switches")) for a in args)
    one = plan_bench(site, BenchJob(supernodes="sn1"), facts, jobs_root=tmp_path)
    assert "--nodelist=n[4-7]" in one.request.sbatch_args()
    # without names: the strategy's own option
    anyk = plan_bench(site, BenchJob(count=2), facts, jobs_root=tmp_path).request.sbatch_args()
    assert "--nodelist=n[0-7]" not in anyk
    assert any(a.startswith(("--segment=4", "--switches=2")) for a in anyk)


def test_bench_script_quotes_values_and_is_valid_bash(tmp_path):
    site = _local()
    db = str(tmp_path / "it's $(here).sqlite")
    plan = plan_bench(site, BenchJob(db=db, workdir=str(tmp_path)), jobs_root=tmp_path)
    assert shlex.quote(db) in plan.script
    check = subprocess.run(["bash", "-n"], input=plan.script, text=True, capture_output=True)
    assert check.returncode == 0, check.stderr


def test_submit_dry_run_never_imports_torch(tmp_path):
    code = (
        "import sys; from slurm_supernode.cli.main import main; "
        "rc = main(['bench', 'submit', '--site', 'local', '--dry-run', "
        f"'--jobs-dir', {str(tmp_path)!r}]); "
        "print('TORCH' if 'torch' in sys.modules else 'NOTORCH', rc)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                              "SLURM_CONF": "/nonexistent"}, timeout=60)  # fmt: skip
    assert out.stdout.split()[-2:] == ["NOTORCH", "0"], out.stderr
    assert "srun --kill-on-bad-exit=1" in out.stdout


@pytest.mark.parametrize(
    ("requested", "has", "mode", "notice"),
    [
        ("auto", True, "scrontab", None),
        ("auto", False, "chain", "ScronParameters=enable"),
        ("chain", True, "chain", None),
        ("scrontab", True, "scrontab", None),
    ],
)
def test_choose_mode_falls_back_to_chain(requested, has, mode, notice):
    why = (
        None
        if has
        else "scrontab is disabled on this cluster (slurm.conf needs ScronParameters=enable)"
    )
    got_mode, got_notice = sch.choose_mode(requested, has, why)
    assert got_mode == mode
    assert (got_notice is None) if notice is None else (notice in got_notice)


def test_choose_mode_scrontab_refused_says_why():
    with pytest.raises(InputError, match="ScronParameters=enable") as info:
        sch.choose_mode(
            "scrontab",
            False,
            "scrontab is disabled on this cluster (slurm.conf needs ScronParameters=enable)",
        )
    assert info.value.hint and "--mode chain" in info.value.hint


@pytest.mark.parametrize("strategy", ["block", "switches"])
def test_named_supernodes_with_spares_are_pinned_by_feature_counts(tmp_path, strategy):
    """With spare nodes a job takes fewer nodes than the super nodes hold, so their nodelist
    would be refused (`invalid number of nodes (-N 8-6)`): the pin is a count per feature."""
    from slurm_supernode.doctor.job import DoctorJob, plan_doctor
    from slurm_supernode.launch.request import ClusterFacts

    text = (ROOT / "site-configs" / "local.yaml").read_text()
    for nodes in ("n[0-3]", "n[4-7]"):
        text = text.replace(f"    nodes: {nodes}\n", f"    nodes: {nodes}\n    spares: 1\n")
    path = tmp_path / "s.yaml"
    path.write_text(text.replace("strategy: auto", f"strategy: {strategy}"))
    site = load_site(str(path))
    plugin = "topology/block" if strategy == "block" else "topology/tree"
    facts = ClusterFacts(
        version=(24, 11, 5), topology_plugin=plugin, supports_segment=True, has_block=True
    )
    args = plan_bench(site, BenchJob(supernodes="sn[0-1]"), facts, jobs_root=tmp_path)
    args = args.request.sbatch_args()
    assert "--nodes=6" in args and "--constraint=[sn0*3&sn1*3]" in args
    assert not any(a.startswith(("--nodelist", "--segment", "--switches")) for a in args)
    one = plan_doctor(site, DoctorJob(supernodes="sn1"), facts, jobs_root=tmp_path)
    args = one.request.sbatch_args()
    assert "--nodes=3" in args and "--constraint=sn1" in args
    assert not any(a.startswith("--nodelist") for a in args)
    # features (a tree site): one super node's own constraint is the pin, no nodelist either
    path.write_text(path.read_text().replace(f"strategy: {strategy}", "strategy: features"))
    site = load_site(str(path))
    one = plan_doctor(site, DoctorJob(supernodes="sn1"), facts, jobs_root=tmp_path)
    args = one.request.sbatch_args()
    assert "--nodes=3" in args and "--constraint=[sn1]" in args, args
    assert not any(a.startswith("--nodelist") for a in args)
