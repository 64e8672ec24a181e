"""The pyslurm backend of the Slurm layer, against a fake `pyslurm` package (a real one needs a
Slurm 25.11 to build against: tests/integration/test_pyslurm_backend.py runs that one).

The fake is a package on sys.path with its own dist-info (so the probe finds its release
without importing it, as it does for the real one) and module-level stores the tests fill."""

from __future__ import annotations

import json
import logging
import sys
import textwrap
from datetime import datetime

import pytest

from slurm_supernode.errors import SlurmError, SlurmErrorKind
from slurm_supernode.slurm import job_lookup as jobs
from slurm_supernode.slurm import jobinfo, nodes, pyslurm_probe, pyslurm_queries, pyslurm_records
from slurm_supernode.slurm.state import JobState

FAKE_PYSLURM = '''
"""A fake pyslurm: the classes and errors the backend uses, over module-level stores."""
import os

IMPORTS = []
IMPORTS.append(os.environ.get("SLURM_CONF"))
CONF = [os.environ.get("SLURM_CONF")]  # what libslurm reads: once, until slurm_fini
ASKED = []  # the configuration each Job.load was answered from


def slurm_fini():
    CONF[0] = None


def slurm_init(config_path=None):
    if CONF[0] is None:  # libslurm ignores a second init
        CONF[0] = config_path or os.environ.get("SLURM_CONF")
JOBS = {}
NODES = []
PARTITIONS = []
FAIL = {}


class PyslurmError(Exception):
    pass


class RPCError(PyslurmError):
    def __init__(self, errno=-1, msg=None):
        self.errno, self.msg = errno, msg or "error %d" % errno
        super().__init__(self.msg)


class _Collection(dict):
    pass


def _maybe_fail(what):
    if what in FAIL:
        raise FAIL[what]


class Job:
    @staticmethod
    def load(job_id):
        _maybe_fail("Job.load")
        ASKED.append(CONF[0])
        if job_id not in JOBS:
            raise RPCError(2017, "Invalid job id specified")
        return JOBS[job_id]


class Jobs:
    @staticmethod
    def load():
        _maybe_fail("Jobs.load")
        return _Collection(JOBS)


class Nodes:
    @staticmethod
    def load():
        _maybe_fail("Nodes.load")
        return _Collection({n.name: n for n in NODES})


class Partitions:
    @staticmethod
    def load():
        _maybe_fail("Partitions.load")
        return _Collection({p.name: p for p in PARTITIONS})
'''


class Obj:
    """A pyslurm object: just attributes."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def fake_job(**over) -> Obj:
    base = dict(
        id=42,
        name="train",
        state="RUNNING",
        state_reason="None",
        exit_code=0,
        exit_code_signal=0,
        derived_exit_code=0,
        allocated_nodes="n[0-1]",
        num_nodes=2,
        requeue_count=1,
        partition="main",
        start_time=1_700_000_000,
        end_time=1_700_003_600,
        working_directory="/work",
        standard_output="/work/slurm-42.out",
    )
    base.update(over)
    return Obj(**base)


def fake_node(**over) -> Obj:
    base = dict(
        name="n0",
        state="IDLE+DRAIN",
        active_features=["sn0", "nvl72"],
        available_features=["sn0", "nvl72"],
        reason="bad gpu",
        partitions=["main", "debug"],
        configured_gres={"gpu": 8},
        total_cpus=16,
    )
    base.update(over)
    return Obj(**base)


@pytest.fixture
def fake_pyslurm(tmp_path, monkeypatch):
    """Installs the fake (release 25.11.2), a slurm.conf, a fake `sinfo --version` saying
    25.11.7 and a fresh probe; yields the module once imported through the backend."""
    site = tmp_path / "site"
    (site / "pyslurm").mkdir(parents=True)
    (site / "pyslurm" / "__init__.py").write_text(FAKE_PYSLURM)
    dist = site / "pyslurm-25.11.2.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pyslurm\nVersion: 25.11.2\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "pyslurm", raising=False)
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=fake\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    sinfo = bindir / "sinfo"
    sinfo.write_text(
        textwrap.dedent("""\
        #!/bin/sh
        echo "slurm ${FAKE_SLURM_VERSION:-25.11.7}"
    """)
    )
    sinfo.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    monkeypatch.delenv("SNRUN_SLURM_BACKEND", raising=False)
    pyslurm_probe._probe_once.cache_clear()
    yield
    pyslurm_probe._probe_once.cache_clear()
    sys.modules.pop("pyslurm", None)


def imported():
    return sys.modules["pyslurm"]


# ----- the probe: each reason to skip, checked before the import -----------------------------


def probe(env, *, installed="25.11.2", running=(25, 11), load=None):
    calls = []

    def _load(name):
        calls.append(name)
        if load is not None:
            return load(name)
        return Obj(name=name)

    found = pyslurm_probe.probe(
        env, installed=lambda: installed, running=lambda: running, load=_load
    )
    return found, calls


def test_probe_skips_without_slurm_conf_and_never_imports(tmp_path):
    found, calls = probe({})
    assert found.api is None and "SLURM_CONF is not set" in found.why_not and calls == []
    found, calls = probe({"SLURM_CONF": str(tmp_path / "missing.conf")})
    assert found.api is None and "is not a file" in found.why_not and calls == []


def test_probe_reasons_in_order(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("")
    env = {"SLURM_CONF": str(conf)}
    assert probe({**env, "SNRUN_SLURM_BACKEND": "cli"})[0].why_not == "SNRUN_SLURM_BACKEND=cli"
    found, calls = probe(env, installed=None)
    assert found.why_not == "pyslurm is not installed" and calls == []
    found, calls = probe(env, running=(22, 5))
    assert found.api is None and calls == []
    assert found.why_not == "pyslurm 25.11.2 serves Slurm 25.11 only, this is 22.05"
    found, calls = probe(env, running=(26, 5))
    assert "this is 26.05" in found.why_not and calls == []


def test_probe_import_failure_is_a_reason_not_a_crash(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("")

    def broken(name):
        raise RuntimeError("pyslurm requires Slurm 25.11, found 26.5")

    found, calls = probe({"SLURM_CONF": str(conf)}, load=broken)
    assert found.api is None and calls == ["pyslurm"]
    assert found.why_not == "import pyslurm failed: pyslurm requires Slurm 25.11, found 26.5"


def test_probe_unknown_version_of_running_slurm(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("")

    def unreachable():
        raise SlurmError("sinfo: no config", kind=SlurmErrorKind.NO_CONFIG)

    found = pyslurm_probe.probe(
        {"SLURM_CONF": str(conf)}, installed=lambda: "25.11.2", running=unreachable
    )
    assert found.api is None and "version is unknown: sinfo: no config" in found.why_not


def test_probe_match_imports(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("")
    found, calls = probe({"SLURM_CONF": str(conf)})
    assert found.api is not None and found.why_not is None and calls == ["pyslurm"]


def test_bad_backend_choice_is_one_clear_error(tmp_path):
    with pytest.raises(SlurmError, match="SNRUN_SLURM_BACKEND='fast' is not one of"):
        pyslurm_probe.probe({"SNRUN_SLURM_BACKEND": "fast"})


def test_major_minor():
    assert pyslurm_probe.major_minor("25.11.2") == (25, 11)
    assert pyslurm_probe.major_minor("25.11") == (25, 11)
    assert pyslurm_probe.major_minor("unknown") is None


# ----- through the layer: the fake answers jobs, nodes, partitions ---------------------------


def test_another_slurm_conf_is_read_before_the_next_query(fake_pyslurm, tmp_path, monkeypatch):
    """libslurm reads one slurm.conf per process (at import): when SLURM_CONF names another
    cluster, the loaded pyslurm re-reads it instead of asking the first cluster."""
    first = str(tmp_path / "slurm.conf")
    other = tmp_path / "other.conf"
    other.write_text("ClusterName=other\n")
    jobs.controller_jobs(None)  # the probe imports the fake, reading the first SLURM_CONF
    api = imported()
    api.JOBS.update({1: fake_job(id=1), 2: fake_job(id=2)})
    jobs.job_info(1)
    monkeypatch.setenv("SLURM_CONF", str(other))
    jobs.job_info(1)
    jobs.job_info(2)
    monkeypatch.setenv("SLURM_CONF", first)
    jobs.job_info(1)
    imports, asked = api.IMPORTS, api.ASKED
    assert imports == [first]  # one import; libslurm re-read, not re-imported
    assert asked == [first, str(other), str(other), first]


def test_pyslurm_that_cannot_re_read_slurm_conf_is_skipped(fake_pyslurm, tmp_path, monkeypatch):
    jobs.controller_jobs(None)
    api = imported()
    api.JOBS[1] = fake_job(id=1)
    jobs.job_info(1)
    monkeypatch.delattr(api, "slurm_init")
    other = tmp_path / "other.conf"
    other.write_text("ClusterName=other\n")
    monkeypatch.setenv("SLURM_CONF", str(other))
    assert pyslurm_probe.pyslurm_api() is None  # auto: the command line answers
    monkeypatch.setenv("SNRUN_SLURM_BACKEND", "pyslurm")
    with pytest.raises(SlurmError, match="cannot re-read slurm.conf"):
        pyslurm_probe.pyslurm_api()
    asked = api.ASKED
    assert asked == [str(tmp_path / "slurm.conf")]


def test_job_info_goes_through_pyslurm(fake_pyslurm):
    jobs.controller_jobs(None)  # the probe imports the fake, with SLURM_CONF set
    api = imported()
    assert api.IMPORTS and api.IMPORTS[0]
    api.JOBS[42] = fake_job()
    info = jobs.job_info(42)
    assert info == jobinfo.JobInfo(
        job_id=42,
        name="train",
        state=JobState("RUNNING"),
        reason=None,
        exit_code=0,
        exit_signal=0,
        derived_exit_code=0,
        nodelist="n[0-1]",
        num_nodes=2,
        restart_count=1,
        partition="main",
        start_time=datetime.fromtimestamp(1_700_000_000),
        end_time=datetime.fromtimestamp(1_700_003_600),
        work_dir="/work",
        stdout="/work/slurm-42.out",
        source="pyslurm",
    )
    api.JOBS[43] = fake_job(id=43, name="other", state="PENDING", allocated_nodes=None)
    assert sorted(i.job_id for i in jobs.controller_jobs()) == [42, 43]
    assert [i.name for i in jobs.jobs_named("other")] == ["other"]


def test_unknown_job_is_empty_not_an_error(fake_pyslurm):
    jobs.controller_jobs(None)
    assert jobs.controller_jobs(7) == []


@pytest.mark.parametrize(
    ("errno", "message", "kind"),
    [
        (1800, "Unable to contact slurm controller (connect failure)", SlurmErrorKind.UNREACHABLE),
        (5004, "Socket timed out on send/recv operation", SlurmErrorKind.TIMEOUT),
        (1804, "Slurm backoff", SlurmErrorKind.BUSY),
        (2021, "Job/step already completing or completed", SlurmErrorKind.ENDED),
        # an errno the table does not know: Slurm's message decides, as for a command's stderr
        (99999, "Unable to contact slurm controller", SlurmErrorKind.UNREACHABLE),
        (99998, "Access/permission denied", SlurmErrorKind.REFUSED),
    ],
)
def test_pyslurm_errors_become_error_kinds(fake_pyslurm, errno, message, kind):
    jobs.controller_jobs(None)
    api = imported()
    api.FAIL["Jobs.load"] = api.RPCError(errno, message)
    with pytest.raises(SlurmError) as err:
        jobs.controller_jobs()
    assert err.value.kind is kind and message in str(err.value)
    assert str(err.value).startswith("pyslurm Jobs.load failed: ")


def test_non_pyslurm_errors_are_not_swallowed(fake_pyslurm):
    jobs.controller_jobs(None)
    imported().FAIL["Job.load"] = ZeroDivisionError("bug")
    with pytest.raises(ZeroDivisionError):
        jobs.controller_jobs(1)


def test_nodes_and_partitions_through_pyslurm(fake_pyslurm):
    nodes.partition_infos()
    api = imported()
    # Slurm 25.11 keeps the " " that `Reason= ` sets (resume's clear): no reason either
    api.NODES[:] = [fake_node(), fake_node(name="n1", state="MIXED", reason=" ")]
    api.PARTITIONS[:] = [
        Obj(
            name="main",
            nodes="n[0-1]",
            total_nodes=2,
            max_nodes="UNLIMITED",
            is_default=True,
            state="UP",
        ),
        Obj(name="debug", nodes="n1", total_nodes=1, max_nodes=1, is_default=False, state="UP"),
    ]
    n0, n1 = nodes.node_infos()
    assert n0 == nodes.NodeInfo(
        name="n0",
        state="idle",
        flags=("drain",),
        features=("sn0", "nvl72"),
        reason="bad gpu",
        partitions=("main", "debug"),
        gres="gpu:8",
        cpus=16,
    )
    assert n0.drained and not n0.usable and (n1.state, n1.flags, n1.reason) == ("mixed", (), None)
    assert [n.name for n in nodes.node_infos("n1")] == ["n1"]
    with pytest.raises(SlurmError) as err:
        nodes.node_infos(["n9"])
    assert err.value.kind is SlurmErrorKind.NOT_FOUND
    main, debug = nodes.partition_infos()
    assert main == nodes.PartitionInfo("main", "n[0-1]", 2, None, True, "up")
    assert (debug.max_nodes, debug.default) == (1, False)
    api.FAIL["Nodes.load"] = api.RPCError(1001, "Communication connection failure")
    with pytest.raises(SlurmError) as err:
        nodes.node_infos()
    assert err.value.kind is SlurmErrorKind.UNREACHABLE and err.value.hint


def test_version_mismatch_keeps_the_command_line(fake_pyslurm, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("FAKE_SLURM_VERSION", "22.05.8")
    scontrol = tmp_path / "bin" / "scontrol"  # 22.05's: no --json, then the -o text form
    scontrol.write_text(
        '#!/bin/sh\ncase "$*" in *--json*) echo "scontrol: unrecognized option \'--json\'" >&2;'
        " exit 1;; esac\necho 'JobId=5 JobName=cli JobState=RUNNING NumNodes=1'\n"
    )
    scontrol.chmod(0o755)
    with caplog.at_level(logging.DEBUG, logger="slurm_supernode"):
        (info,) = jobs.controller_jobs(5)
    assert info.name == "cli" and info.source == "scontrol" and "pyslurm" not in sys.modules
    assert "pyslurm skipped: pyslurm 25.11.2 serves Slurm 25.11 only, this is 22.05" in caplog.text


def test_forced_pyslurm_that_cannot_serve_is_an_error(fake_pyslurm, monkeypatch):
    monkeypatch.setenv("SNRUN_SLURM_BACKEND", "pyslurm")
    monkeypatch.delenv("SLURM_CONF")
    with pytest.raises(SlurmError, match="SNRUN_SLURM_BACKEND=pyslurm, but SLURM_CONF is not set"):
        jobs.controller_jobs(1)


def test_debug_flag_shows_the_backend_choice(fake_pyslurm, monkeypatch, capsys):
    from slurm_supernode.cli import main as cli_main

    monkeypatch.setenv("SNRUN_SLURM_BACKEND", "cli")
    logger = logging.getLogger("slurm_supernode")
    monkeypatch.setattr(logger, "handlers", [])
    monkeypatch.setattr(logger, "level", logging.NOTSET)
    cli_main._show_debug_log()
    with pytest.raises(SlurmError):  # no scontrol on PATH: the command line was chosen
        jobs.controller_jobs(1)
    err = capsys.readouterr().err
    assert "snrun: debug: Slurm queries use the command line: pyslurm skipped:" in err
    assert "SNRUN_SLURM_BACKEND=cli" in err


# ----- record details ------------------------------------------------------------------------


def test_job_record_edge_values():
    pending = pyslurm_records.job_from_pyslurm(
        fake_job(
            state="PENDING",
            state_reason="Resources",
            allocated_nodes=None,
            start_time=None,
            end_time=0,
            standard_output="",
            requeue_count=None,
            derived_exit_code=None,
        )
    )
    assert (str(pending.state), pending.reason, pending.nodelist) == ("PENDING", "Resources", None)
    assert pending.start_time is None and pending.end_time is None and pending.stdout is None
    assert pending.restart_count is None and pending.derived_exit_code is None and pending.pending
    failed = pyslurm_records.job_from_pyslurm(fake_job(state="FAILED", exit_code=3))
    assert failed.ended and failed.exit_code == 3


def test_gres_text():
    assert pyslurm_records.gres_text({"gpu": 8}) == "gpu:8"
    assert pyslurm_records.gres_text({"gpu:a100": 4, "nic": 1}) == "gpu:a100:4,nic:1"
    assert pyslurm_records.gres_text({"gpu": {"count": 2, "indexes": "0-1"}}) == "gpu:2"
    assert pyslurm_records.gres_text({}) is None and pyslurm_records.gres_text("(null)") is None


def test_error_kind_without_errno():
    assert pyslurm_queries.error_kind(RuntimeError("Invalid job id specified")) is (
        SlurmErrorKind.NOT_FOUND
    )


def test_a_completing_job_through_pyslurm_is_not_ended_and_gives_no_nodes():
    """pyslurm gives one word (the flag hides the base, as in the text forms): COMPLETING is
    not an end, and its node list (only the nodes still completing) is never the allocation."""
    info = pyslurm_records.job_from_pyslurm(fake_job(state="COMPLETING", allocated_nodes="n5"))
    assert info.state.completing and not info.state.ended
    assert info.nodelist is None
    done = pyslurm_records.job_from_pyslurm(fake_job(state="COMPLETED", allocated_nodes="n[0-3]"))
    assert done.state.ended and done.nodelist == "n[0-3]"


def test_exit_codes_of_jobs_that_failed_come_from_scontrol(fake_pyslurm, tmp_path):
    """pyslurm reads exit status 137 as 9 and cannot tell it from a real 9: the non-zero exit
    codes of ended jobs come from scontrol, one query for all of them; running jobs and jobs
    that ended 0 never cost one."""
    jobs.controller_jobs(None)
    api = imported()
    api.JOBS[42] = fake_job()  # running
    api.JOBS[43] = fake_job(id=43, state="COMPLETED")  # ended 0
    log = tmp_path / "scontrol-calls"
    scontrol = tmp_path / "bin" / "scontrol"
    answer = {
        "jobs": [
            {"job_id": 44, "job_state": ["FAILED"], "exit_code": {"return_code": {"number": 137},
             "signal": {"id": {"number": 0}}}, "derived_exit_code": {"return_code":
             {"number": 0}, "signal": {"id": {"number": 9}}}},
        ]
    }  # fmt: skip
    scontrol.write_text(f"#!/bin/sh\necho \"$*\" >>{log}\necho '{json.dumps(answer)}'\n")
    scontrol.chmod(0o755)
    assert [i.exit_code for i in jobs.controller_jobs()] == [0, 0]
    assert not log.exists()  # nothing ended non-zero: pyslurm alone
    api.JOBS[44] = fake_job(id=44, state="FAILED", exit_code=9, derived_exit_code=0,
                            exit_code_signal=0)  # fmt: skip
    by_id = {i.job_id: i for i in jobs.controller_jobs()}
    assert (by_id[44].exit_code, by_id[44].exit_signal, by_id[44].source) == (137, 0, "pyslurm")
    assert by_id[42].exit_code == 0 and by_id[43].exit_code == 0
    assert log.read_text().splitlines() == ["show job --json 44"]
