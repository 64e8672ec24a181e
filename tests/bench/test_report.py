"""The regression report: baseline, thresholds, exit codes, HTML and Prometheus outputs."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from slurm_supernode.api.bench_report import thresholds
from slurm_supernode.bench.report import (
    REGRESSION_EXIT,
    Thresholds,
    build_reports,
)
from slurm_supernode.bench.store import open_store
from slurm_supernode.cli.main import main
from slurm_supernode.site.model import BenchSettings
from tests.bench.helpers import make_run

DAY = 86400.0


def _history(db, scales, **kw):
    with open_store(db) as store:
        for i, scale in enumerate(scales):
            wrong = 0
            if isinstance(scale, tuple):
                scale, wrong = scale
            store.add_run(make_run(1e9 + i * DAY, scale=scale, wrong=wrong, **kw))


def _report(db, *extra):
    return main(["bench", "report", "--db", str(db), *extra])


def test_injected_regression_fails_with_exit_3(tmp_path, capsys):
    db = tmp_path / "b.sqlite"
    _history(db, [1.0, 1.02, 0.98, 1.0, 0.99, 1.01, 1.0, 0.8])
    assert _report(db) == REGRESSION_EXIT == 3
    out = capsys.readouterr().out
    assert "REGRESSION" in out and "FAILED (4 regression)" in out  # 2 collectives x 2 sizes
    assert "-20.0%" in out
    with open_store(db) as store:
        (rep,) = build_reports(store)
    by_size = {(c.collective, c.size): c.status for c in rep.comparisons}
    assert by_size[("all_reduce", 1 << 10)] == "ok"  # small sizes never fail (noise)
    assert by_size[("all_reduce", 64 << 20)] == "regression"


def test_baseline_only_from_runs_of_the_same_kind_and_settings(tmp_path, capsys):
    """Doctor runs (other iterations, another kind) never become a bench run's baseline, and a
    bench run with other settings starts its own history instead of failing against them."""
    db = tmp_path / "b.sqlite"
    _history(db, [1.0, 1.0, 1.0], kind="doctor", params="iters=5 warmup=1 check=1")
    _history(db, [1.3, 1.3], params="iters=50 warmup=5 check=1")
    with open_store(db) as store:
        store.add_run(make_run(1e9 + 10 * DAY, scale=0.8))  # 20 iterations: nothing like it
    assert _report(db) == 0  # -38% against the 50-iteration runs would have been a regression
    out = capsys.readouterr().out
    assert "REGRESSION" not in out
    assert "# kind bench  iters=20 warmup=5 check=1" in out and "# kind doctor" in out
    with open_store(db) as store:
        reports = {(r.run.kind, r.run.params): r for r in build_reports(store)}
    assert len(reports) == 3
    newest = reports[("bench", "iters=20 warmup=5 check=1")]
    assert {c.status for c in newest.comparisons} == {"new"}
    assert {c.baseline_count for c in reports[("doctor", "iters=5 warmup=1 check=1")]
            .comparisons} == {2}  # fmt: skip
    with open_store(db) as store:  # a second run like the newest: compared with it only
        store.add_run(make_run(1e9 + 11 * DAY, scale=0.6))
    assert _report(db) == REGRESSION_EXIT


def test_within_threshold_passes_and_threshold_option_tightens(tmp_path, capsys):
    db = tmp_path / "b.sqlite"
    _history(db, [1.0, 1.0, 1.0, 0.95])
    assert _report(db) == 0
    assert "OK" in capsys.readouterr().out
    assert _report(db, "--threshold", "3") == REGRESSION_EXIT
    assert _report(db, "--threshold", "3", "--min-bytes", "1G") == 0


def test_baseline_is_median_of_last_n_good_runs(tmp_path):
    db = tmp_path / "b.sqlite"
    # old fast runs age out; a run with wrong results never enters the baseline
    _history(db, [2.0, 2.0, 2.0, 1.0, (5.0, 1), 1.2, 0.9, 1.0])
    with open_store(db) as store:
        (rep,) = build_reports(store, thresholds=Thresholds(baseline_runs=3))
        first = make_run(0)
    c = next(c for c in rep.comparisons if c.collective == "all_gather" and c.size == 64 << 20)
    expected = sorted([1.0, 1.2, 0.9])[1] * next(
        r.busbw for r in first.results if r.collective == "all_gather" and r.size == 64 << 20
    )
    assert c.baseline_busbw == pytest.approx(expected)
    assert c.baseline_count == 3 and c.status == "ok"


def test_wrong_results_fail_and_first_run_is_new(tmp_path, capsys):
    db = tmp_path / "b.sqlite"
    _history(db, [(1.0, 2)])
    assert _report(db) == REGRESSION_EXIT
    assert "WRONG" in capsys.readouterr().out
    db2 = tmp_path / "c.sqlite"
    _history(db2, [1.0])
    with open_store(db2) as store:
        (rep,) = build_reports(store)
    assert {c.status for c in rep.comparisons} == {"new"}
    assert _report(db2) == 0


def test_groups_and_site_filter(tmp_path, capsys):
    db = tmp_path / "b.sqlite"
    _history(db, [1.0, 1.0, 0.5], site="east")
    _history(db, [1.0, 1.0, 1.0], site="west", supernode="sn7", nodes=1)
    with open_store(db) as store:
        reports = build_reports(store)
    assert [(r.run.site, bool(r.failures)) for r in reports] == [("east", True), ("west", False)]
    assert _report(db, "--site", "west") == 0
    assert _report(db, "--site", "east") == REGRESSION_EXIT


def test_site_settings_give_thresholds_and_floors(tmp_path):
    th = thresholds(BenchSettings(regression_pct=4.0, baseline_runs=2,
                                  min_busbw_gbps=(("world", 99.0),)))  # fmt: skip
    assert (th.regression_pct, th.baseline_runs, th.floors) == (4.0, 2, (("world", 99.0),))
    assert thresholds(BenchSettings(regression_pct=4.0), threshold_pct=20.0).regression_pct == 20.0
    db = tmp_path / "b.sqlite"
    _history(db, [1.0, 1.0])
    with open_store(db) as store:
        (rep,) = build_reports(store, thresholds=th)
    # the floor applies at the largest size only (98.5 GB/s < 99 there)
    assert {(c.size, c.status) for c in rep.comparisons if c.collective == "all_reduce"} == {
        (1 << 10, "ok"), (1 << 20, "ok"), (64 << 20, "below_floor"),
    }  # fmt: skip


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)


PROM_LINE = re.compile(
    r'^[a-zA-Z_:][a-zA-Z0-9_:]*\{([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*\} '
    r"[-+]?[0-9.]+(e[-+]?[0-9]+)?$"
)


def test_html_and_prom_outputs_are_written_and_parse(tmp_path):
    db = tmp_path / "b.sqlite"
    _history(db, [1.0, 1.0, 1.0, 0.7], site='we"ird\\site')
    html_out, prom_out = tmp_path / "out" / "r.html", tmp_path / "out" / "r.prom"
    (tmp_path / "out").mkdir()  # output directories are not created (a typo would be)
    code = _report(db, "--html", str(html_out), "--prom", str(prom_out), "--json",
                   str(tmp_path / "r.json"))  # fmt: skip
    assert code == REGRESSION_EXIT
    assert sorted(p.name for p in html_out.parent.iterdir()) == ["r.html", "r.prom", "r.prom.lock"]

    page = html_out.read_text()
    parser = _Collect()
    parser.feed(page)
    assert parser.tags.count("svg") == 2 and "table" in parser.tags  # size + history plots
    for svg in re.findall(r"<svg.*?</svg>", page, flags=re.S):
        root = ET.fromstring(svg)  # well-formed XML
        assert root.findall("{http://www.w3.org/2000/svg}polyline")
    assert "regression" in page

    lines = prom_out.read_text().splitlines()
    samples = [ln for ln in lines if not ln.startswith("#")]
    assert samples and all(PROM_LINE.match(ln) for ln in samples), samples[:3]
    assert all(ln.startswith(("# HELP ", "# TYPE ")) for ln in lines if ln.startswith("#"))
    busbw = [ln for ln in samples if ln.startswith("snrun_bench_busbw_gbps{")]
    assert len(busbw) == 6
    assert 'site="we\\"ird\\\\site"' in busbw[0] and 'scope="world"' in busbw[0]
    assert any('collective="all_reduce",dtype="bfloat16",size="1024"}' in ln for ln in busbw)
    failing = [ln for ln in samples if ln.startswith("snrun_bench_regression{")]
    assert sum(ln.endswith(" 1") for ln in failing) == 4


def test_empty_and_missing_databases(tmp_path, capsys):
    db = tmp_path / "b.sqlite"
    open_store(db).close()
    assert _report(db) == 0
    assert "no bench runs" in capsys.readouterr().out
    assert _report(tmp_path / "none.sqlite") == 2
    err = capsys.readouterr().err
    assert "none.sqlite: no results database here" in err
    assert "snrun bench submit" in err and "bench run" not in err  # not the in-job command


def test_report_path_does_not_import_torch(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    db, page = tmp_path / "b.sqlite", tmp_path / "x.html"
    _history(db, [1.0])
    code = (
        "import sys; from slurm_supernode.cli.main import main;"
        f"rc = main(['bench', 'report', '--db', {str(db)!r}, '--html', {str(page)!r}]);"
        "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(rc)"
    )
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, env={"PYTHONPATH": root})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert page.exists()


def test_chunked_sizes_floored_below_min_bytes_are_still_judged(tmp_path, capsys):
    """An all_gather asked for 1M over 3 ranks measures 1048574 bytes (a multiple of 3
    elements): it is the 1M row, shown and able to fail with --min-bytes 1M."""
    import dataclasses

    from slurm_supernode.bench.collectives import element_count
    from slurm_supernode.bench.model import ELEMENT_SIZE

    def floored(run):
        out = []
        for r in run.results:
            n = element_count(r.collective, r.size, r.dtype, 3)
            out.append(dataclasses.replace(r, group_size=3, count=n,
                                           size=n * ELEMENT_SIZE[r.dtype]))  # fmt: skip
        return dataclasses.replace(run, results=tuple(out))

    db = tmp_path / "b.sqlite"
    with open_store(db) as store:
        for i, scale in enumerate([1.0, 1.0, 1.0, 0.5]):
            store.add_run(floored(make_run(1e9 + i * DAY, scale=scale)))
        (rep,) = build_reports(store, thresholds=Thresholds(min_bytes=1 << 20))
    gathered = {c.size: c for c in rep.comparisons if c.collective == "all_gather"}
    assert sorted(gathered) == [1020, 1048572, 67108860]  # floored to a multiple of 3 elements
    assert gathered[1048572].judged and gathered[1048572].status == "regression"
    assert not gathered[1020].judged and gathered[1020].status == "ok"
    assert _report(db, "--min-bytes", "1M") == REGRESSION_EXIT
    shown = [line.split() for line in capsys.readouterr().out.splitlines() if "all_gather" in line]
    assert [row[3] for row in shown] == ["1048572", "67108860"]
