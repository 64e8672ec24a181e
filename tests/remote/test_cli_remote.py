"""`snrun --cluster NAME ...`: the dispatch in main, and what crosses (the script, outputs)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from slurm_supernode.cli import main as cli_main
from slurm_supernode.cli import remote as cli_remote


@pytest.fixture
def calls(monkeypatch):
    seen = []
    monkeypatch.setattr(cli_remote, "run_remote", lambda *a: seen.append(a) or 0)
    monkeypatch.delenv("SNRUN_CLUSTER", raising=False)
    return seen


def test_the_option_and_the_variable_send_the_verb_there(calls, monkeypatch):
    assert cli_main.main(["--cluster", "lab", "status", "12"]) == 0
    assert cli_main.main(["--cluster=lab", "--debug", "train.py", "--lr", "1"]) == 0
    monkeypatch.setenv("SNRUN_CLUSTER", "big")
    assert cli_main.main(["logs", "-f", "3"]) == 0
    assert calls == [
        ("lab", "status", ["12"]),
        ("lab", "submit", ["train.py", "--lr", "1"]),
        ("big", "logs", ["-f", "3"]),
    ]


def test_the_variable_leaves_the_laptops_own_verbs_here(calls, monkeypatch, capsys):
    monkeypatch.setenv("SNRUN_CLUSTER", "big")
    monkeypatch.setenv("SNRUN_CLUSTERS_FILE", "/nonexistent/clusters.yaml")
    assert cli_main.main(["clusters", "--no-check"]) == 2  # ran here: no file, said so
    assert calls == []
    assert "no clusters file at /nonexistent/clusters.yaml" in capsys.readouterr().err


def test_bad_cluster_options_are_one_line(capsys, monkeypatch):
    monkeypatch.delenv("SNRUN_CLUSTER", raising=False)
    assert cli_main.main(["--cluster"]) == 2
    assert cli_main.main(["--cluster", "lab", "agent"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "snrun: error: --cluster: needs a cluster name"
    assert "`snrun agent` runs here, not on a cluster" in err[1] and len(err) == 2


def test_output_files_of_bench_report_and_doctor():
    args = ["report", "--html", "r.html", "--json=out/r.json", "--site", "x"]
    assert cli_remote._outputs("bench", args) == [
        (2, "--html", "r.html"),
        (3, "--json", "out/r.json"),
    ]
    assert cli_remote._outputs("bench", ["run", "--json", "x.json"]) == []  # in a job: its own
    assert cli_remote._outputs("doctor", ["-S", "1", "--html", "d.html"]) == [
        (3, "--html", "d.html")
    ]
    assert cli_remote._outputs("metrics", ["7", "--html=m.html"]) == [(1, "--html", "m.html")]
    assert cli_remote._outputs("status", ["--json"]) == []


@pytest.fixture
def shipped(monkeypatch):
    import slurm_supernode.api.remote_code as code

    sent = []
    monkeypatch.setattr(
        code,
        "ship",
        lambda t, p: (
            sent.append(p)
            or SimpleNamespace(
                program=f"/store/trees/h/code/{p.name}", summary=lambda c: "code: ..."
            )
        ),
    )
    monkeypatch.setattr(code, "report", lambda s, c: None)
    return sent


def test_the_script_is_shipped_and_its_path_replaced(tmp_path, shipped, monkeypatch):
    (tmp_path / "train.py").write_text("print(1)\n")
    monkeypatch.chdir(tmp_path)
    transport = SimpleNamespace(cluster=SimpleNamespace(name="lab"))
    args = ["-S", "2", "-D", "/scratch/run", "--env", "A=1", "train.py", "--data", "/data/x", "-S"]
    out = cli_remote._ship_program(transport, args)
    assert out == [
        "-S",
        "2",
        "-D",
        "/scratch/run",
        "--env",
        "A=1",
        "--",
        "/store/trees/h/code/train.py",
        "--data",
        "/data/x",
        "-S",
    ]
    assert [p.name for p in shipped] == ["train.py"]


@pytest.mark.parametrize(
    "args",
    [["-m", "pkg.train", "--lr", "1"], ["/cluster/only/train.py"], ["--dry-run"]],
)
def test_what_is_not_a_file_here_goes_as_it_is(tmp_path, shipped, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    transport = SimpleNamespace(cluster=SimpleNamespace(name="lab"))
    assert cli_remote._ship_program(transport, args) == args
    assert shipped == []
