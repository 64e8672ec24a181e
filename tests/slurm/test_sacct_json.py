"""`sacct --json` (accounting through slurmdbd): the parser on outputs recorded from real 24.11.5
(data_parser v0.0.42) and 26.05.5 (v0.0.45) clusters with slurmdbd (contrib/minicluster), the
detection (JSON where accounting answers in JSON, the text form elsewhere) and clean errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_supernode.errors import SlurmError, SlurmErrorKind
from slurm_supernode.slurm import job_lookup, jobinfo
from slurm_supernode.slurm.version import accounting_storage

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"
VERSIONS = ["24.11", "26.05"]


def recorded(kind: str, version: str) -> list[jobinfo.JobInfo]:
    return jobinfo.sacct_json_records((DATA / f"sacct_json_{kind}_{version}.json").read_text())


@pytest.mark.parametrize("version", VERSIONS)
def test_failed_job_from_accounting(version):
    (info,) = recorded("failed", version)
    assert (info.name, str(info.state), info.source) == ("failing", "FAILED", "sacct-json")
    assert (info.exit_code, info.exit_signal, info.derived_exit_code) == (1, 0, 3)
    assert info.ended and info.num_nodes == 1 and info.nodelist and info.nodelist.startswith("n")
    assert info.restart_count == 0 and info.partition == "main" and info.reason is None
    assert info.start_time is not None and info.end_time is not None
    assert info.end_time >= info.start_time
    assert info.stdout == "/dev/null" and info.work_dir == "/tmp"


@pytest.mark.parametrize("version", VERSIONS)
def test_completed_two_node_job(version):
    (info,) = recorded("completed", version)
    assert (info.name, str(info.state), info.exit_code, info.derived_exit_code) == (
        "fine",
        "COMPLETED",
        0,
        0,
    )
    assert info.num_nodes == 2 and info.nodelist is not None and "[" in info.nodelist


@pytest.mark.parametrize("version", VERSIONS)
def test_held_job_has_no_nodes_nor_times(version):
    (info,) = recorded("pending", version)
    assert (info.name, info.num_nodes, info.nodelist) == ("held", 0, None)
    assert str(info.state) == "PENDING"
    assert info.pending and info.start_time is None and info.end_time is None


@pytest.mark.parametrize("version", VERSIONS)
def test_cancelled_running_job(version):
    (info,) = recorded("cancelled", version)
    assert (info.name, str(info.state)) == ("sleeper", "CANCELLED")
    assert info.ended and info.nodelist is not None and info.end_time is not None


@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_job_is_an_empty_list(version):
    assert recorded("unknown", version) == []


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n",
        "JobID|State\n1|FAILED",
        "[1, 2]",
        '{"jobs": 5}',
        '{"jobs": [], "errors": [{"description": "Unable to query accounting", "error": "x"}]}',
        '{"jobs": [',
    ],
)
def test_malformed_json_is_one_slurm_error(text):
    with pytest.raises(SlurmError) as err:
        jobinfo.sacct_json_records(text)
    assert err.value.kind is SlurmErrorKind.BAD_OUTPUT
    assert "sacct --json" in str(err.value) and "\n" not in str(err.value)


def test_entries_that_are_not_objects_are_skipped():
    good = (DATA / "sacct_json_failed_26.05.json").read_text()
    doc = good.replace('"jobs": [', '"jobs": [7, "x", ', 1)
    assert [i.name for i in jobinfo.sacct_json_records(doc)] == ["failing"]


def test_accounting_storage_from_config():
    assert accounting_storage({"AccountingStorageType": "accounting_storage/slurmdbd"}) == (
        "accounting_storage/slurmdbd"
    )
    assert accounting_storage({"AccountingStorageType": "accounting_storage/none"}) is None
    assert accounting_storage({"AccountingStorageType": "(null)"}) is None
    assert accounting_storage({}) is None


# ----- detection: which form sacct is asked in -----------------------------------------------

TEXT_ROW = "12|failing|FAILED|1:0|3:0|n0|1|main|2026-11-30T16:04:47|2026-11-30T16:04:48|/tmp"


def fake_sacct(fake_bin, log: Path, *, json_reply: str, json_rc: int = 0) -> None:
    """sacct that answers --json with `json_reply` (exit `json_rc`), -c and -P with TEXT_ROW."""
    reply = log.with_name("json_reply")
    reply.write_text(json_reply + "\n")
    fake_bin(
        "sacct",
        f'echo "$*" >>{log}\n'
        'case " $* " in\n'
        f"  *' --json '*) cat {reply}; exit {json_rc} ;;\n"
        f"  *) echo {TEXT_ROW!r} ;;\n"
        "esac",
    )


def test_accounting_with_json_is_asked_once(fake_bin, tmp_path):
    log = tmp_path / "calls"
    fake_sacct(fake_bin, log, json_reply=(DATA / "sacct_json_failed_24.11.json").read_text())
    job = recorded("failed", "24.11")[0].job_id
    info = job_lookup.sacct_job_info(job, completion=False)
    assert info is not None and info.source == "sacct-json" and info.derived_exit_code == 3
    assert log.read_text().splitlines() == [f"--json -j {job}"]


@pytest.mark.parametrize(
    "refusal",
    [
        "Slurm accounting storage is disabled",  # 24.11 / 26.05 without slurmdbd
        "sacct: fatal: slurm_openapi_p_init: slurm not configured with slurmdbd",  # 22.05
        "sacct: unrecognized option '--json'",
    ],
)
def test_no_json_from_accounting_falls_back_to_text(fake_bin, tmp_path, refusal):
    log = tmp_path / "calls"
    fake_sacct(fake_bin, log, json_reply=refusal, json_rc=1)
    info = job_lookup.sacct_job_info(12, completion=False)
    assert info is not None and info.source == "sacct"
    assert (str(info.state), info.exit_code, info.derived_exit_code) == ("FAILED", 1, 3)
    calls = log.read_text().splitlines()
    assert calls[0] == "--json -j 12" and calls[1].startswith("-j 12 -P")


def test_completion_log_is_read_as_text_only(fake_bin, tmp_path):
    log = tmp_path / "calls"
    fake_sacct(fake_bin, log, json_reply="{}")
    info = job_lookup.sacct_job_info(12, completion=True)
    assert info is not None and info.source == "sacct-c"
    assert [c.split()[0] for c in log.read_text().splitlines()] == ["-c"]


def test_sacct_printing_garbage_is_a_slurm_error(fake_bin, tmp_path):
    fake_sacct(fake_bin, tmp_path / "calls", json_reply="Segmentation fault")
    with pytest.raises(SlurmError, match="sacct --json printed no JSON"):
        job_lookup.sacct_job_info(12, completion=False)


def _gone_from_controller(fake_bin):
    fake_bin("scontrol", 'echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1')


def test_job_info_prefers_accounting_json_after_the_controller(fake_bin, tmp_path):
    log = tmp_path / "calls"
    _gone_from_controller(fake_bin)
    fake_sacct(fake_bin, log, json_reply=(DATA / "sacct_json_failed_26.05.json").read_text())
    job = recorded("failed", "26.05")[0].job_id
    info = job_lookup.job_info(job)
    assert info is not None and info.source == "sacct-json" and info.restart_count == 0
    assert log.read_text().splitlines() == [f"--json -j {job}"]


def test_job_info_when_accounting_does_not_know_the_job(fake_bin, tmp_path):
    """Accounting answered (no such job): the completion log is asked, the text form is not."""
    log = tmp_path / "calls"
    _gone_from_controller(fake_bin)
    fake_sacct(fake_bin, log, json_reply=(DATA / "sacct_json_unknown_26.05.json").read_text())
    info = job_lookup.job_info(12)
    assert info is not None and info.source == "sacct-c"
    assert [c.split()[0] for c in log.read_text().splitlines()] == ["--json", "-c"]


def test_job_info_without_accounting_reads_the_completion_log(fake_bin, tmp_path):
    log = tmp_path / "calls"
    _gone_from_controller(fake_bin)
    fake_sacct(fake_bin, log, json_reply="Slurm accounting storage is disabled", json_rc=1)
    info = job_lookup.job_info(12)
    assert info is not None and info.source == "sacct-c" and info.derived_exit_code == 3
