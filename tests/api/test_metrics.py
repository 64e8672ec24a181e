"""api/metrics.py and `snrun metrics` / `snrun top --once` on a job directory whose records are
written through records.append (tests/observe/attempt_fixture.py)."""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from slurm_supernode.api.metrics import job_metrics, job_report, newest_checkpoint
from slurm_supernode.chain import ledger
from slurm_supernode.cli.main import main
from slurm_supernode.errors import InputError
from tests.observe.attempt_fixture import NODES, SLOW, T0, write_attempt


def job_dir(tmp_path: Path, attempts: int = 1) -> Path:
    d = tmp_path / "jobs" / "train.py-1"
    (d / "plan.json").parent.mkdir(parents=True)
    (d / "plan.json").write_text("{}")  # no site copy: super nodes only from the slow mark
    for a in range(attempts):
        ledger.append(d, "attempt_start", attempt=a, job_id=4242, nodes="sn0-n[0-1],sn1-n[0-1]")
        write_attempt(d, a, slow=a == 0)
        if a < attempts - 1:
            ledger.append(d, "attempt_end", attempt=a, job_id=4242, exit_code=1)
    return d


def test_current_attempt_and_by_number(tmp_path):
    d = job_dir(tmp_path, attempts=2)
    now = job_metrics(d)
    assert now.attempt == 1 and now.state == "RUNNING" and now.job_id == 4242
    assert [n.node for n in now.nodes] == list(NODES) and now.slow == []
    first = job_metrics(str(d), attempt=0)
    assert first.attempt == 0 and first.state == "ENDED" and first.slow[0].node == SLOW
    with pytest.raises(InputError, match="no attempt 5") as exc:
        job_metrics(d, attempt=5)
    assert exc.value.where == "attempt"


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"job": 1.5}, "job"),
        ({"job": True}, "job"),
        ({"attempt": "0"}, "attempt"),
        ({"attempt": -1}, "attempt"),
        ({"window": 0}, "window"),
        ({"window": 2.0}, "window"),
        ({"jobs_dir": 3}, "jobs_dir"),
        ({"site": 3}, "site"),
    ],
)
def test_arguments_are_checked(tmp_path, kwargs, where):
    args = {"job": job_dir(tmp_path)} | kwargs
    with pytest.raises(InputError) as exc:
        job_metrics(args.pop("job"), **args)
    assert exc.value.where == where


def test_checkpoint_age(tmp_path):
    d = job_dir(tmp_path)
    ckpt = d / "checkpoints" / "step-40" / "model.pt"
    ckpt.parent.mkdir(parents=True)
    ckpt.write_bytes(b"x")
    os.utime(ckpt, (1000.0, 1000.0))
    assert newest_checkpoint(d / "checkpoints") == 1000.0
    assert job_metrics(d).checkpoint_age_s > 0
    assert newest_checkpoint(d / "nothing") is None


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        assert tag not in ("script", "link", "img"), tag  # self-contained, no scripts

    def handle_data(self, data):
        self.text.append(data)


def test_html_report(tmp_path):
    page = job_report(job_dir(tmp_path))
    parser = _Page()
    parser.feed(page)
    text = " ".join(parser.text)
    assert parser.tags.count("svg") == 4
    for title in (
        "step time per node",
        "device utilization",
        "device power",
        "communication share of a step vs the plan",
    ):
        assert title in text
    assert f"slow node {SLOW} (sn1): x1.60" in text
    assert all(node in text for node in NODES)
    assert "plan 18%" in text
    assert not re.search(r"(src|href)=\"(https?:)?//", page)


def test_html_report_without_steps_says_unknown(tmp_path):
    d = tmp_path / "jobs" / "j"
    d.mkdir(parents=True)
    (d / "plan.json").write_text("{}")
    ledger.append(d, "attempt_start", attempt=0, job_id=7, nodes="n1")
    page = job_report(d)
    assert "progress unknown" in page and "<svg" not in page


def test_cli_metrics_json_text_html(tmp_path, capsys):
    d = job_dir(tmp_path)
    root = str(d.parent)
    assert main(["metrics", str(d), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["job_id"] == 4242 and len(data["nodes"]) == 4
    assert data["nodes"][0]["devices"][0]["util_percent"] == 97.0
    assert data["comm"]["plan_share"] == 0.18 and data["slow"][0]["node"] == SLOW
    assert main(["metrics", str(d), "--jobs-dir", root]) == 0
    assert f"SLOW NODE {SLOW}" in capsys.readouterr().out
    out = tmp_path / "report.html"
    assert main(["metrics", str(d), "--html", str(out)]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert main(["metrics", str(d), "--attempt", "3"]) != 0
    assert "no attempt 3" in capsys.readouterr().err


def test_cli_top_once(tmp_path, capsys):
    d = job_dir(tmp_path)
    assert main(["top", str(d), "--once"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("snrun top  job 4242 attempt 0 RUNNING")
    assert sum(line.startswith(NODES) for line in out.splitlines()) == 4
    assert "\x1b" not in out


def test_cli_top_picks_the_newest_running_chain(tmp_path, slurm, capsys):
    d = job_dir(tmp_path)
    ended = tmp_path / "jobs" / "old"
    ended.mkdir()
    (ended / "plan.json").write_text("{}")
    ledger.append(ended, "attempt_start", attempt=0, job_id=4000, nodes="n1")
    ledger.append(ended, "final", job_id=4000, state="COMPLETED")
    os.utime(ended, (T0 - 10, T0 - 10))
    slurm.set_jobs({4242: "RUNNING"})
    assert main(["top", "--once", "--jobs-dir", str(d.parent)]) == 0
    assert "job 4242" in capsys.readouterr().out
    slurm.set_jobs({})
    ledger.append(d, "final", job_id=4242, state="COMPLETED")
    assert main(["top", "--once", "--jobs-dir", str(d.parent)]) != 0
    assert "no running snrun job" in capsys.readouterr().err


def test_super_nodes_from_the_jobs_site_copy(tmp_path):
    from tests.runtime.inputs import make_inputs

    site = Path(__file__).resolve().parents[2] / "site-configs" / "local.yaml"
    d = tmp_path / "j"
    d.mkdir()
    (d / "plan.json").write_text(make_inputs(site_file=str(site)).to_json())
    ledger.append(d, "attempt_start", attempt=0, job_id=9, nodes="n[3-4],elsewhere")
    s = job_metrics(d)
    assert [(n.node, n.supernode) for n in s.nodes] == [
        ("n3", "sn0"),
        ("n4", "sn1"),
        ("elsewhere", None),
    ]


def test_the_lower_calls_check_their_arguments_too(tmp_path):
    from slurm_supernode.api.metrics import attempt_metrics, newest_running_job

    d = job_dir(tmp_path)
    for args, where in (
        ((str(d), None, 20), "job_dir"),
        ((d, "1", 20), "attempt"),
        ((d, None, 0), "window"),
        ((d, None, 20, "now"), "now"),
    ):
        with pytest.raises(InputError) as exc:
            attempt_metrics(*args)
        assert exc.value.where == where
    with pytest.raises(InputError) as exc:
        newest_running_job(jobs_dir=d.parent, last=0)
    assert exc.value.where == "last"
