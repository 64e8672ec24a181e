"""`snrun doctor` on the login node without Slurm: judging a facts file (exit codes, JSON,
HTML page), the dry run's script, and bad input as one line with exit 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

from slurm_supernode.cli.main import main
from tests.doctor.helpers import facts

ROOT = Path(__file__).resolve().parents[2]
SITE = str(ROOT / "site-configs" / "local.yaml")


def _facts_file(tmp_path, **kw) -> str:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts(**kw).to_dict()))
    return str(path)


def test_facts_with_a_slow_node_exit_2_name_it_and_write_the_page(tmp_path, capsys):
    slow = lambda scope, hosts: 30.0 if "n5" in hosts else 100.0  # noqa: E731
    page = tmp_path / "doctor.html"
    rc = main(
        [
            "doctor",
            "--site",
            SITE,
            "--facts",
            _facts_file(tmp_path, busbw_of=slow),
            "--html",
            str(page),
        ]
    )
    out = capsys.readouterr().out
    assert rc == 2
    assert out.startswith("SNRUN DOCTOR FAIL - site local, job 42, 8 node(s): intra: n5:")
    assert "n5 is slow in both pairings" in out and "next: drain n5" in out
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "n5 is slow in both pairings" in text
    assert 'fill="#d62728"' in text  # the slow groups drawn red
    data = json.loads(page.with_suffix(".json").read_text())
    assert data["verdict"] == "fail" and [s["step"] for s in data["steps"]] == [
        "device",
        "intra",
        "cross",
        "bandwidth",
        "topology",
        "storage",
    ]


def test_json_report_all_ok_exits_0(tmp_path, capsys):
    rc = main(
        [
            "doctor",
            "--site",
            SITE,
            "--facts",
            _facts_file(tmp_path, busbw_of=lambda s, h: 400.0),
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["verdict"] == "ok"
    bw = next(s for s in data["steps"] if s["step"] == "bandwidth")
    assert {f["check"] for f in bw["findings"]} == {"node", "supernode", "inter"}
    assert all(set(f) >= {"measured", "expected", "verdict", "next"} for f in bw["findings"])


def test_no_gpus_exit_3_unknown(tmp_path, capsys):
    rc = main(
        ["doctor", "--site", SITE, "--facts", _facts_file(tmp_path, gpus=False, backend="gloo")]
    )
    out = capsys.readouterr().out
    assert rc == 3 and out.startswith("SNRUN DOCTOR UNKNOWN")
    assert "there are no GPUs here" in out


def test_dry_run_prints_the_job_running_the_in_job_part(tmp_path, capsys):
    rc = main(
        [
            "doctor",
            "--site",
            SITE,
            "-S",
            "1",
            "--nproc-per-node",
            "2",
            "--dry-run",
            "--jobs-dir",
            str(tmp_path),
            "--db",
            str(tmp_path / "r.sqlite"),
        ]
    )
    script = capsys.readouterr().out
    assert rc == 0
    assert "doctor --in-job --backend auto --db" in script and "slurm_supernode agent" in script
    assert "--no-requeue" in script and "snrun-doctor" in script


def test_bad_input_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["doctor", "--site", SITE, "--facts", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.json" in err[0] and "not a doctor facts file" in err[0]
    assert (
        main(
            [
                "doctor",
                "--site",
                SITE,
                "--nodes",
                "n[6-9]",
                "--dry-run",
                "--jobs-dir",
                str(tmp_path),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "snrun: error: --nodes: site local has no node n[8-9]",
        "hint: nodes: n[0-7]",
    ] or (len(err) <= 2 and "n[8-9]" in err[0])
    assert main(["doctor", "--site", SITE, "--nodes", "n[1-", "--dry-run"]) == 2
    assert "--nodes: bad hostlist" in capsys.readouterr().err


def test_unwritable_page_is_one_line(tmp_path, capsys):
    rc = main(
        [
            "doctor",
            "--site",
            SITE,
            "--facts",
            _facts_file(tmp_path),
            "--html",
            str(tmp_path / "facts.json" / "d.html"),  # under a file
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and ": error: --html: cannot write" in err[0]


def test_overlap_step_runs_srun_inside_the_running_job(tmp_path, monkeypatch):
    from slurm_supernode.slurm.steps import overlap_step

    fake = tmp_path / "srun"
    fake.write_text('#!/bin/sh\necho "$@"; echo "port=$SNRUN_MASTER_PORT"; exit 3\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    proc = overlap_step(
        812, "n[2-3]", 2, ["python3", "-m", "x"], env={"SNRUN_MASTER_PORT": "40001"}
    )
    assert proc.returncode == 3
    assert proc.stdout.splitlines() == [
        "--jobid=812 --overlap --nodelist=n[2-3] --nodes=2 --ntasks=2 --ntasks-per-node=1 "
        "--kill-on-bad-exit=1 --export=ALL python3 -m x",
        "port=40001",
    ]
