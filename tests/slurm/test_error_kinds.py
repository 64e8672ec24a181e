"""SlurmError kinds: every failure of a Slurm command says what kind it is, and callers (the
submit retry, job_info, cancel, scrontab) branch on the kind, not on the message text."""

from __future__ import annotations

import pytest

from slurm_supernode.errors import SlurmError, SlurmErrorKind
from slurm_supernode.launch.job import submit_job
from slurm_supernode.slurm import jobs, scrontab
from slurm_supernode.slurm.runner import run_slurm, stderr_kind

UNREACHABLE = (
    "sbatch: error: Batch job submission failed: Unable to contact slurm controller "
    "(connect failure)"
)


@pytest.mark.parametrize(
    ("stderr", "kind"),
    [
        (UNREACHABLE, SlurmErrorKind.UNREACHABLE),
        ("slurm_load_jobs error: Socket timed out on send/recv operation", SlurmErrorKind.TIMEOUT),
        ("sbatch: error: Resource temporarily unavailable", SlurmErrorKind.BUSY),
        ("slurm_load_jobs error: Invalid job id specified", SlurmErrorKind.NOT_FOUND),
        ("scancel: error: Job/step already completing or completed", SlurmErrorKind.ENDED),
        ("sbatch: error: Batch job submission failed: Invalid account", SlurmErrorKind.REFUSED),
        ("", SlurmErrorKind.REFUSED),
    ],
)
def test_stderr_kinds(stderr, kind):
    assert stderr_kind(stderr) is kind


def test_transient_kinds_are_exactly_the_unjudged_ones():
    assert {k for k in SlurmErrorKind if k.transient} == {
        SlurmErrorKind.UNREACHABLE,
        SlurmErrorKind.TIMEOUT,
        SlurmErrorKind.BUSY,
    }


def test_runner_raises_with_kind(fake_bin, tmp_path, monkeypatch):
    fake_bin("sbatch", f"echo '{UNREACHABLE}' >&2; exit 1")
    with pytest.raises(SlurmError) as err:
        run_slurm(["sbatch"])
    assert err.value.kind is SlurmErrorKind.UNREACHABLE
    fake_bin("sbatch", "echo 'sbatch: error: Invalid account' >&2; exit 1")
    with pytest.raises(SlurmError) as err:
        run_slurm(["sbatch"])
    assert err.value.kind is SlurmErrorKind.REFUSED
    fake_bin("sinfo", "exec sleep 5")
    with pytest.raises(SlurmError) as err:
        run_slurm(["sinfo"], timeout=0.2)
    assert err.value.kind is SlurmErrorKind.TIMEOUT
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with pytest.raises(SlurmError) as err:
        run_slurm(["sinfo"])
    assert err.value.kind is SlurmErrorKind.NOT_INSTALLED


def test_scancel_of_an_ended_job_is_no_error_but_other_failures_are(fake_bin):
    fake_bin(
        "scancel", "echo 'scancel: error: Job/step already completing or completed' >&2; exit 1"
    )
    jobs.cancel(5)
    fake_bin("scancel", "echo 'scancel: error: Access/permission denied' >&2; exit 1")
    with pytest.raises(SlurmError) as err:
        jobs.cancel(5)
    assert err.value.kind is SlurmErrorKind.REFUSED


def test_scrontab_none_is_empty(fake_bin):
    fake_bin("scrontab", "echo 'no crontab for alice' >&2; exit 1")
    assert scrontab.read_scrontab() == ""


def _plan(tmp_path):
    import dataclasses

    from tests.launch.test_render import plan

    p = plan(tmp_path)
    source = tmp_path / "site.yaml"
    source.write_text("name: test\n")
    return dataclasses.replace(p, site=dataclasses.replace(p.site, source=str(source)))


def test_submit_retries_an_unreachable_controller_then_succeeds(fake_bin, tmp_path):
    """The retry once never fired: it matched 'unable to contact' against Slurm's 'Unable'."""
    calls = tmp_path / "calls"
    fake_bin(
        "sbatch",
        f'cat >/dev/null; echo x >> "{calls}"\n'
        f'if [ "$(wc -l < "{calls}")" -lt 3 ]; then echo \'{UNREACHABLE}\' >&2; exit 1; fi\n'
        "echo 77",
    )
    assert submit_job(_plan(tmp_path), backoff=0.0) == 77
    assert len(calls.read_text().splitlines()) == 3


def test_submit_gives_up_after_the_attempts_with_the_kind(fake_bin, tmp_path):
    calls = tmp_path / "calls"
    fake_bin("sbatch", f"cat >/dev/null; echo x >> '{calls}'; echo '{UNREACHABLE}' >&2; exit 1")
    with pytest.raises(SlurmError) as err:
        submit_job(_plan(tmp_path), attempts=2, backoff=0.0)
    assert err.value.kind is SlurmErrorKind.UNREACHABLE
    assert len(calls.read_text().splitlines()) == 2


def test_submit_does_not_retry_a_refusal(fake_bin, tmp_path):
    calls = tmp_path / "calls"
    fake_bin(
        "sbatch",
        f"cat >/dev/null; echo x >> '{calls}'; "
        "echo 'sbatch: error: Batch job submission failed: Invalid account' >&2; exit 1",
    )
    with pytest.raises(SlurmError) as err:
        submit_job(_plan(tmp_path), backoff=0.0)
    assert err.value.kind is SlurmErrorKind.REFUSED
    assert len(calls.read_text().splitlines()) == 1
