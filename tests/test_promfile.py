"""Prometheus textfiles: every file snrun writes passes the real exposition parser
(prometheus_client's) with no series twice, whatever wrote to it before; one writer merges
each command's series into the file and keeps the others'."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from slurm_supernode.cli.main import main
from slurm_supernode.promfile import (
    Family,
    PromFileError,
    Scope,
    Series,
    check,
    family,
    labels,
    merge,
    parse,
    render,
    write_textfile,
)

ROOT = Path(__file__).resolve().parents[1]
SITE = str(ROOT / "site-configs" / "local.yaml")


def scraped(text: str) -> dict[tuple[str, tuple], float]:
    """What a scraper reads: prometheus_client's parser; a series twice fails here (the
    textfile collector refuses such a file; the client parser would take both)."""
    seen: dict[tuple[str, tuple], float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in seen, f"series twice: {key}"
            seen[key] = s.value
    names = [ln.split()[2] for ln in text.splitlines() if ln.startswith("# TYPE ")]
    assert len(names) == len(set(names)), "a family's TYPE twice"
    return seen


def test_render_parse_round_trip_with_escapes() -> None:
    fams = [
        family("a_b", "help with \\ and\nnewline", [(labels(x='q"uo\\te\nnl', y=1), 1.5)]),
        family("c", "c", [((), float("nan")), (labels(k="v"), float("inf"))]),
    ]
    text = render(fams)
    check(text)
    got = scraped(text)
    assert got[("a_b", (("x", 'q"uo\\te\nnl'), ("y", "1")))] == 1.5
    again = parse(text)
    assert [f.name for f in again] == ["a_b", "c"] and again[0].help == "help with \\ and\nnewline"
    assert again[0].series[0].labels == (("x", 'q"uo\\te\nnl'), ("y", "1"))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('m{a="1"} 1\nm{a="1"} 2\n', "appears twice"),
        ("# TYPE m gauge\n# TYPE m gauge\nm 1\n", "second TYPE"),
        ('m{a="1"} 1\nn 1\nm{a="2"} 2\n', "not together"),
        ("m 1\n# HELP m late\n", "after its samples"),
        ("1m 1\n", "bad metric name"),
        ('m{a-b="1"} 1\n', "bad label name"),
        ('m{a="1} 1\n', "unterminated"),
        ("m one\n", "not a number"),
        ('m{a="1",a="2"} 1\n', "a label twice"),
        ("# TYPE m histogramx\nm 1\n", "type 'histogramx'"),
    ],
)
def test_check_refuses_what_the_collector_refuses(text: str, fragment: str) -> None:
    with pytest.raises(PromFileError, match=None) as info:
        check(text)
    assert fragment in str(info.value)


def test_merge_replaces_only_the_writers_scope() -> None:
    old = [family("snrun_health_status", "h", [(labels(node="n1"), 0), (labels(node="n2"), 2)]),
           family("other_metric", "o", [((), 7)])]  # fmt: skip
    new = [family("snrun_health_status", "h", [(labels(node="n2"), 0)])]
    merged = merge(old, new, Scope("snrun_health_", labels(node="n2")))
    values = scraped(render(merged))
    assert values == {
        ("snrun_health_status", (("node", "n1"),)): 0,
        ("snrun_health_status", (("node", "n2"),)): 0,
        ("other_metric", ()): 7,
    }
    with pytest.raises(ValueError, match="outside the writer's scope"):
        merge(old, [Family("snrun_health_status", "h", (Series("snrun_health_status",
              labels(node="n9"), 1),))], Scope("snrun_health_", labels(node="n2")))  # fmt: skip


def test_a_foreign_file_is_never_overwritten(tmp_path) -> None:
    from slurm_supernode.errors import InputError

    path = tmp_path / "x.prom"
    path.write_text("m 1 2 3 garbage\n")
    with pytest.raises(InputError, match="not a Prometheus textfile snrun can merge into"):
        write_textfile(path, [family("snrun_x", "x", [((), 1)])], Scope("snrun_x"))
    assert path.read_text() == "m 1 2 3 garbage\n"


def _bench_and_doctor_history(db: Path) -> None:
    """Bench runs and a doctor run on the same racks (super nodes, node count) of one site."""
    from slurm_supernode.bench.store import open_store
    from tests.bench.helpers import make_run

    with open_store(db) as store:
        for i, scale in enumerate((1.0, 1.0, 0.7)):
            store.add_run(make_run(1e9 + i, scale=scale, site="local", supernode="sn0,sn1",
                                   nodes=8))  # fmt: skip
        store.add_run(make_run(2e9, site="local", supernode="sn0,sn1", nodes=8, kind="doctor",
                               params="iters=5 warmup=1 check=1"))  # fmt: skip


def test_bench_doctor_and_health_into_one_file_parse_with_no_series_twice(
    tmp_path, monkeypatch, capsys
) -> None:
    from tests.doctor.helpers import facts

    monkeypatch.delenv("SNRUN_SITE", raising=False)
    monkeypatch.delenv("SNRUN_BENCH_DB", raising=False)
    db, prom = tmp_path / "b.sqlite", tmp_path / "snrun.prom"
    _bench_and_doctor_history(db)
    facts_file = tmp_path / "facts.json"
    facts_file.write_text(json.dumps(facts().to_dict()))

    def everything() -> dict:
        assert main(["bench", "report", "--db", str(db), "--prom", str(prom)]) == 3
        assert main(["doctor", "--site", SITE, "--facts", str(facts_file),
                     "--prom", str(prom)]) == 2  # fmt: skip
        for node in ("n1", "n2"):
            assert main(["health", "--node", node, "--expect-devices", "0", "--prom",
                         str(prom)]) in (0, 1, 3)  # fmt: skip
        return scraped(prom.read_text())

    first = everything()
    second = everything()  # whatever ran before: the same series again, never twice
    capsys.readouterr()
    assert set(first) == set(second)
    busbw = {k: v for k, v in first.items() if k[0] == "snrun_bench_busbw_gbps"}
    kinds = {dict(k[1])["kind"] for k in busbw}
    assert kinds == {"bench", "doctor"}  # the same racks, told apart by the kind label
    same_racks = {tuple(x for x in k[1] if x[0] not in ("kind", "params")) for k in busbw}
    assert len(same_racks) == len(busbw) // 2  # each rack series once per kind
    assert first[("snrun_doctor_status", (("site", "local"),))] == 2
    assert first[("snrun_doctor_step_status", (("site", "local"), ("step", "bandwidth")))] == 2
    assert {dict(k[1])["node"] for k in first if k[0] == "snrun_health_status"} == {"n1", "n2"}
    assert ("snrun_health_check_status", (("check", "devices"), ("node", "n1"))) in first


def test_health_prom_refuses_a_missing_directory_before_checking(tmp_path, capsys) -> None:
    assert main(["health", "--node", "n1", "--expect-devices", "0", "--prom",
                 str(tmp_path / "no" / "x.prom")]) == 2  # fmt: skip
    assert "--prom: directory" in capsys.readouterr().err
