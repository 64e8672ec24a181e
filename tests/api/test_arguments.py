"""The API checks its arguments like the command line does: a wrong type or value is an
``InputError`` naming the parameter (never a CLI option, never another exception), a string is
no list of strings, ``submit(spec)`` is refused, and nothing is submitted from bad input: a
fake sbatch on PATH records every call (a fuzz test over the public API's types and values)."""

from __future__ import annotations

import dataclasses
import stat

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_supernode import api
from slurm_supernode.api.arguments import check_spec
from slurm_supernode.api.wording import _OPTION, parameter_of
from slurm_supernode.cli.main import main
from slurm_supernode.errors import InputError, SlurmError
from slurm_supernode.launch.jobspec import JobSpec


@pytest.fixture
def no_slurm(tmp_path_factory, monkeypatch):
    """PATH with a fake sbatch (it logs every call, prints a job id) and Slurm commands that
    find no controller: whatever the API does, a submission would show in the log."""
    root = tmp_path_factory.mktemp("fake")
    log = root / "sbatch.calls"
    log.write_text("")
    sbatch = root / "bin" / "sbatch"
    sbatch.parent.mkdir()
    sbatch.write_text(f'#!/bin/sh\necho "$*" >>{log}\necho 4242\n')
    sbatch.chmod(sbatch.stat().st_mode | stat.S_IEXEC)
    for name in ("scontrol", "sinfo", "squeue", "sacct", "srun", "scancel"):  # no controller
        fake = sbatch.parent / name
        fake.write_text("#!/bin/sh\necho 'Unable to contact slurm controller' >&2\nexit 1\n")
        fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{sbatch.parent}:/usr/bin:/bin")
    (root / "slurm.conf").write_text("ClusterName=none\n")
    monkeypatch.setenv("SLURM_CONF", str(root / "slurm.conf"))
    monkeypatch.setenv("SNRUN_SLURM_BACKEND", "cli")
    monkeypatch.setenv("SNRUN_JOBS_DIR", str(root / "jobs"))
    monkeypatch.chdir(root)
    (root / "train.py").write_text("print('hi')\n")
    return log


def spec(**fields) -> JobSpec:
    return JobSpec(**({"program": "train.py", "site": "local"} | fields))


def refused(call, *args, **kwargs) -> InputError:
    with pytest.raises(InputError) as info:
        call(*args, **kwargs)
    err = info.value
    assert options_named(f"{err.where} {err.message} {err.hint}") == [], err  # the API's words
    return err


def options_named(text: str) -> list[str]:
    """snrun's options a text names (values in quotes aside)."""
    import re

    return [o for o in _OPTION.findall(re.sub(r"'[^']*'", "", text)) if parameter_of(o)]


def test_a_string_where_a_list_is_meant(no_slurm):
    err = refused(api.plan, spec(program_args="--lr 3e-4"))
    assert err.where == "JobSpec.program_args" and "a string is no list" in err.message
    assert "('--lr', '3e-4')" in err.message
    for field in ("profiles", "sbatch_args"):
        assert refused(api.plan, spec(**{field: "x"})).where == f"JobSpec.{field}"
    assert refused(api.grid, lr="1e-4").where == "grid(lr=...)"
    assert api.grid(lr=["1e-4"]).tasks == ((("lr", "1e-4"),),)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("supernodes", "2"), ("supernodes", 2.0), ("supernodes", 0), ("nodes", -1),
        ("nodes", True), ("nproc_per_node", 1.5), ("max_restarts", -1), ("exclusive", 1),
        ("time", 30), ("env", {"A": "1"}), ("env", (("1A", "x"),)), ("layout", {"tp": 2}),
        ("program", None), ("program", "tr\0ain.py"), ("container", "/i.sqsh"),
        ("container", {"image": "/i", "mount_home": "yes"}), ("container", {"imgae": "/i"}),
        ("container", api.ContainerOptions(image="/i", mount_home="yes")),
        ("container", api.ContainerOptions(image=3)),
        ("container", api.ContainerOptions(image="/i", mounts="/a\0")),
    ],
)  # fmt: skip
def test_wrong_type_or_range_names_the_field(no_slurm, field, value):
    err = refused(api.plan, spec(**{field: value}))
    assert err.where.startswith(f"JobSpec.{field}"), err


def test_layout_fields_are_checked(no_slurm):
    err = refused(api.plan, spec(layout=api.Layout(tp="2")))
    assert err.where == "Layout.tp"
    assert refused(api.plan, spec(layout=api.Layout(pp=0))).where == "Layout.pp"


def test_lists_are_taken_as_tuples():
    checked = check_spec(spec(program_args=["--lr", "3e-4"], env=[["A", "1"]]))
    assert checked.program_args == ("--lr", "3e-4") and checked.env == (("A", "1"),)


def test_the_container_is_options_or_a_mapping_of_their_fields():
    want = api.ContainerOptions(image="/i.sqsh", mounts="/d:/d:ro", mount_home=False)
    given = {"image": "/i.sqsh", "mounts": "/d:/d:ro", "mount_home": False}
    assert check_spec(spec(container=given)).container == want
    assert check_spec(spec(container=want)).container is want
    assert check_spec(spec()).container is None


def test_submit_takes_a_plan_not_a_spec(no_slurm):
    err = refused(api.submit, spec())
    assert err.where == "plan" and "api.submit(api.plan(spec))" in err.hint
    assert no_slurm.read_text() == ""


def test_errors_of_the_layers_below_speak_of_parameters(no_slurm):
    assert refused(api.plan, spec(time="soon")).where == "JobSpec.time"
    assert refused(api.plan, spec(mail_type="NEVER")).where == "JobSpec.mail_type"
    err = refused(api.plan, spec(container=api.ContainerOptions(mounts="/a:/b")))
    assert err.where == "JobSpec.container.mounts" and "JobSpec.container.image" in err.message
    err = refused(api.plan, spec(container={"image": "/no/such.sqsh", "env": "X"}))
    assert err.where == "JobSpec.container.image"  # the local site names no runtime
    assert refused(api.submit, api.plan(spec()), after="12:maybe").where == "after"
    assert refused(api.then, 12, spec(), "maybe").where == "when"


def test_the_command_line_keeps_its_options(no_slurm, capsys):
    assert main(["--site", "local", "-t", "soon", "--dry-run", "train.py"]) == 2
    assert "-t/--time" in capsys.readouterr().err


def test_job_methods_check_their_arguments(tmp_path, no_slurm):
    d = tmp_path / "chain"
    d.mkdir()
    (d / "job.json").write_text('{"job_ids": [7]}')
    job = api.Job(d, 7)
    assert refused(job.wait, timeout="10").where == "timeout"
    assert refused(job.wait, timeout=-1).where == "timeout"
    assert refused(job.wait, progress="print").where == "progress"
    assert refused(lambda: list(job.logs(rank="0"))).where == "rank"
    assert refused(lambda: list(job.logs(streams="stdout"))).where == "streams"
    assert refused(lambda: list(job.logs(tail=-3))).where == "tail"
    assert refused(job.attach, "bash").where == "command"
    assert refused(job.then, "eval.py").where == "spec"
    assert refused(api.Job.from_id, 1.5).where == "job"
    assert refused(api.Job.from_id, 7, jobs_dir=3).where == "jobs_dir"


# ----- the fuzz test ---------------------------------------------------------------------------

ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.binary(max_size=4),
    st.lists(st.one_of(st.text(max_size=6), st.integers()), max_size=3),
    st.tuples(st.text(max_size=6), st.text(max_size=6)),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.just(api.Layout()),
)
FIELDS = [f.name for f in dataclasses.fields(JobSpec)]
FUZZ = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def only_input_errors(call) -> object:
    try:
        return call()
    except InputError as exc:
        assert str(exc)  # one line the CLI could print
        return exc


@FUZZ
@given(st.dictionaries(st.sampled_from(FIELDS), ANY, min_size=1, max_size=3))
def test_fuzz_plan_and_submit(no_slurm, fields):
    """Any types and values in any fields: an InputError or a plan, nothing else; submitting
    it (or the spec by mistake) never reaches sbatch while Slurm cannot be asked."""
    try:
        given_spec = spec(**fields)
    except TypeError:
        return  # not a JobSpec at all (the dataclass refuses unknown fields itself)
    planned = only_input_errors(lambda: api.plan(given_spec))
    only_input_errors(lambda: api.submit(given_spec))
    if isinstance(planned, api.JobPlan):
        for bad in (fields, "", 3.5, ["12:ok"]):
            only_input_errors(lambda bad=bad: api.submit(planned, after=bad))
    assert no_slurm.read_text() == ""


@FUZZ
@given(
    st.dictionaries(st.text(max_size=5), ANY, min_size=0, max_size=3),
    ANY,
    ANY,
)
def test_fuzz_sweeps_and_chains(no_slurm, dims, throttle, when):
    grid = only_input_errors(lambda: api.grid(**dims))
    tasks = grid if not isinstance(grid, InputError) else dims
    fine = (type(throttle) is int and 1 <= throttle <= 1000) or throttle is None
    if isinstance(grid, InputError) or not fine:
        only_input_errors(lambda: api.submit_sweep(spec(), tasks, throttle=throttle))
    else:  # good input: it gets as far as asking Slurm (here: no controller), never to sbatch
        with pytest.raises(SlurmError, match="cannot reach"):
            api.submit_sweep(spec(), tasks, throttle=throttle)
    only_input_errors(lambda: api.then(throttle, spec(), when))
    only_input_errors(lambda: api.Job.from_id(when, jobs_dir=throttle))
    assert no_slurm.read_text() == ""


def test_the_fake_sbatch_would_show_a_submission(no_slurm):
    """The fuzz tests' proof holds: a call of sbatch through the Slurm layer is logged."""
    from slurm_supernode.slurm.runner import run_slurm

    run_slurm(["sbatch", "--parsable", "x"], timeout=10, check=False)
    assert no_slurm.read_text().strip() == "--parsable x"


# ----- the operations: doctor, health, bench, schedules, bench report -------------------------

from slurm_supernode.api import bench, doctor, health, schedules  # noqa: E402
from slurm_supernode.api.bench_report import bench_report  # noqa: E402
from slurm_supernode.bench.submit import BenchJob  # noqa: E402
from slurm_supernode.doctor.job import DoctorJob  # noqa: E402
from slurm_supernode.health.probe import HealthOptions  # noqa: E402


@pytest.mark.parametrize(
    ("call", "where"),
    [
        (lambda: bench.submit_bench("sn0", dry_run=True), "job"),
        (lambda: bench.submit_bench(BenchJob(iters="20", site_arg="local"), dry_run=True),
         "BenchJob.iters"),
        (lambda: bench.plan_bench_job(BenchJob(count=0, site_arg="local")), "BenchJob.count"),
        (lambda: bench.plan_bench_job(BenchJob(profiles="fast", site_arg="local")),
         "BenchJob.profiles"),
        (lambda: doctor.plan_doctor_job("x"), "job"),
        (lambda: doctor.plan_doctor_job(DoctorJob(count="1", site_arg="local")), "DoctorJob.count"),
        (lambda: doctor.plan_doctor_job(DoctorJob(hosts="n4", site_arg="local")),
         "DoctorJob.hosts"),
        (lambda: doctor.run_doctor(DoctorJob(count=1, site_arg="local"), timeout="10"), "timeout"),
        (lambda: doctor.judge_facts_file(3, site="local"), "path"),
        (lambda: health.check_node("n3", site="local"), "options"),
        (lambda: health.check_node(HealthOptions(node=3), site="local"), "HealthOptions.node"),
        (lambda: health.check_node(HealthOptions(node="n3", paths="/x"), site="local"),
         "HealthOptions.paths"),
        (lambda: health.check_node(HealthOptions(node="n3", timeout=float("nan")), site="local"),
         "HealthOptions.timeout"),
        (lambda: health.check_node(HealthOptions(node="n3"), site="local", drain="yes"), "drain"),
        (lambda: schedules.install_schedule(BenchJob(site_arg="local"), 230), "at"),
        (lambda: schedules.remove_schedule(None, site="local"), "key"),
        (lambda: bench_report(site="local", min_bytes=[1]), "min_bytes"),
        (lambda: bench_report(site="local", baseline_runs=0), "baseline_runs"),
    ],
)  # fmt: skip
def test_operations_check_their_arguments(no_slurm, call, where):
    assert refused(call).where == where


def test_operations_errors_below_speak_of_their_fields(no_slurm):
    opts = HealthOptions(node="n3", allreduce=True, container={"mounts": "/a"})
    err = refused(health.check_node, opts, site="local")
    assert "ContainerOptions.mounts without ContainerOptions.image" in err.message


JOBS = {
    BenchJob: [f.name for f in dataclasses.fields(BenchJob) if f.name != "site_arg"],
    DoctorJob: [f.name for f in dataclasses.fields(DoctorJob) if f.name != "site_arg"],
}


@FUZZ
@given(
    st.sampled_from(sorted(JOBS, key=lambda c: c.__name__)),
    st.data(),
)
def test_fuzz_the_operations(no_slurm, cls, data):
    """Any types and values in a bench or doctor job's fields: its plan or an InputError, and
    a bench's dry run submits nothing."""
    fields = data.draw(st.dictionaries(st.sampled_from(JOBS[cls]), ANY, min_size=1, max_size=3))
    try:
        job = cls(**fields, site_arg="local")
    except InputError:
        return  # refused where it is made (its container, as ContainerOptions.of checks it)
    if cls is BenchJob:
        only_input_errors(lambda: bench.submit_bench(job, dry_run=True))
        only_input_errors(lambda: bench.plan_bench_job(job))
    else:
        only_input_errors(lambda: doctor.plan_doctor_job(job))
    assert no_slurm.read_text() == ""


# ----- the remote API (api/remote.py) and the metrics API -------------------------------------

from slurm_supernode.api import metrics, remote  # noqa: E402
from slurm_supernode.remote.failures import RemoteError  # noqa: E402


@pytest.fixture
def fake_ssh(no_slurm, monkeypatch):
    """A clusters file naming ``lab``, and a fake ``ssh`` on PATH that records every call and
    fails as an unreachable host does: a call of ssh from bad input would show in its log."""
    root = no_slurm.parent
    log = root / "ssh.calls"
    log.write_text("")
    ssh = root / "bin" / "ssh"
    ssh.write_text(
        f'#!/bin/sh\necho "$*" >>{log}\n'
        "echo 'ssh: connect to host lab-login port 22: Connection refused' >&2\nexit 255\n"
    )
    ssh.chmod(ssh.stat().st_mode | stat.S_IEXEC)
    (root / "clusters.yaml").write_text("clusters:\n  lab:\n    destination: lab-login\n")
    monkeypatch.setenv("SNRUN_CLUSTERS_FILE", str(root / "clusters.yaml"))
    control = root / "ssh-control"
    control.mkdir(mode=0o700, exist_ok=True)
    monkeypatch.setenv("SNRUN_SSH_CONTROL_DIR", str(control))
    return log


def test_the_fake_ssh_would_show_a_call(fake_ssh):
    """The remote fuzz test's proof holds: good input reaches ssh, and the log shows it."""
    with pytest.raises(RemoteError):
        remote.status(12, cluster="lab")
    assert "lab-login" in fake_ssh.read_text()


@pytest.mark.parametrize(
    ("call", "where"),
    [
        (lambda: remote.status(12, cluster=3), "cluster"),
        (lambda: remote.status(12, cluster=""), "cluster"),
        (lambda: remote.status(12, cluster="lab", last=0), "last"),
        (lambda: remote.status(12, cluster="lab", last="5"), "last"),
        (lambda: remote.status(0, cluster="lab"), "job"),
        (lambda: remote.status("-n", cluster="lab"), "job"),
        (lambda: remote.status(1.5, cluster="lab"), "job"),
        (lambda: remote.statuses("12", cluster="lab"), "jobs"),
        (lambda: remote.statuses([12, ""], cluster="lab"), "jobs[1]"),
        (lambda: remote.cancel(True, cluster="lab"), "job"),
        (lambda: remote.cancel("1\0", cluster="lab"), "job"),
        (lambda: remote.run("status 12", cluster="lab"), "argv"),
        (lambda: remote.run(["status", 12], cluster="lab"), "argv"),
        (lambda: remote.calls(["status"], cluster="lab"), "argvs"),
        (lambda: remote.calls([["status"]], cluster=None), "cluster"),
        (lambda: remote.submit("train.py", "--lr 3e-4", cluster="lab"), "args"),
        (lambda: remote.submit("train.py", cluster="lab", options="-S 1"), "options"),
        (lambda: remote.submit("train.py", cluster="lab", dry_run="yes"), "dry_run"),
        (lambda: remote.submit("missing.py", cluster="lab"), "program"),
        (lambda: remote.submit(3, cluster="lab"), "program"),
        (lambda: remote.logs(12, cluster="lab", follow=1), "follow"),
        (lambda: remote.logs(-4, cluster="lab"), "job"),
        (lambda: remote.logs(12, cluster="lab", options="-r 0"), "options"),
        (lambda: remote.connect(["lab"]), "cluster"),
        (lambda: remote.connect("nowhere"), "cluster"),
        (lambda: remote.connect("lab", check="no"), "check"),
        (lambda: remote.run_calls("lab", [["status"]]), "transport"),
        (lambda: remote.fetch(None, "/x", "y"), "transport"),
        (lambda: metrics.job_metrics("1\0"), "job"),
        (lambda: metrics.job_metrics(0), "job"),
        (lambda: metrics.job_metrics(12, jobs_dir="a\0b"), "jobs_dir"),
        (lambda: metrics.job_metrics(12, window=0), "window"),
        (lambda: metrics.job_report(12, attempt=-1), "attempt"),
        (lambda: metrics.newest_running_job(last=0), "last"),
    ],
)  # fmt: skip
def test_remote_and_metrics_check_their_arguments(fake_ssh, call, where):
    assert refused(call).where == where
    assert fake_ssh.read_text() == ""  # refused before any ssh was run


def test_a_transport_s_arguments_are_checked_before_ssh(fake_ssh):
    transport = remote.connect("lab", check=False)  # no ssh until a command is run
    assert refused(remote.run_calls, transport, [["status", None]]).where == "argvs"
    assert refused(remote.fetch, transport, "", "out").where == "remote_path"
    assert refused(remote.fetch, transport, "/x", 3).where == "local_path"
    assert fake_ssh.read_text() == ""


REMOTE_CALLS = {
    "status": lambda job, cluster, extra: remote.status(job, cluster=cluster, last=extra),
    "statuses": lambda job, cluster, extra: remote.statuses(job, cluster=cluster),
    "cancel": lambda job, cluster, extra: remote.cancel(job, cluster=cluster),
    "run": lambda job, cluster, extra: remote.run(job, cluster=cluster),
    "calls": lambda job, cluster, extra: remote.calls(job, cluster=cluster),
    "submit": lambda job, cluster, extra: remote.submit(
        job, extra, cluster=cluster, options=extra, dry_run=extra
    ),
    "logs": lambda job, cluster, extra: remote.logs(
        job, cluster=cluster, follow=extra, options=extra
    ),
    "connect": lambda job, cluster, extra: remote.connect(cluster, check=extra),
    "metrics": lambda job, cluster, extra: metrics.job_metrics(
        job, attempt=extra, window=extra, jobs_dir=cluster
    ),
    "report": lambda job, cluster, extra: metrics.job_report(job, window=extra, site=cluster),
}


@FUZZ
@given(
    st.sampled_from(sorted(REMOTE_CALLS)),
    ANY,
    st.one_of(st.just("lab"), ANY),
    ANY,
)
def test_fuzz_the_remote_and_metrics_api(fake_ssh, name, job, cluster, extra):
    """Any types and values: an InputError before any ssh is run, or (good input) ssh's own
    failure to reach the host; never another exception."""
    before = fake_ssh.read_text()
    try:
        REMOTE_CALLS[name](job, cluster, extra)
    except InputError as exc:
        assert str(exc)
        assert fake_ssh.read_text() == before, (name, job, cluster, extra)
    except RemoteError:
        assert fake_ssh.read_text() != before  # it did try the (fake) host
