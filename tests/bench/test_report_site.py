"""`snrun bench report --site`: the site's thresholds and results database via load_site."""

from __future__ import annotations

from pathlib import Path

from slurm_supernode.bench.store import open_store
from slurm_supernode.cli.main import main
from tests.bench.helpers import make_run

ROOT = Path(__file__).resolve().parents[2]


def _site_file(tmp_path, pct: float, db: Path) -> str:
    text = (ROOT / "site-configs" / "local.yaml").read_text()
    text = text.replace("regression_pct: 10", f"regression_pct: {pct}")
    text = text.replace("results_db: ~/.snrun/bench.sqlite", f"results_db: {db}")
    path = tmp_path / f"site{pct}.yaml"
    path.write_text(text)
    return str(path)


def test_site_thresholds_and_db_come_from_the_site(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SNRUN_BENCH_DB", raising=False)
    db = tmp_path / "r.sqlite"
    with open_store(db) as store:
        for i, scale in enumerate([1.0, 1.0, 1.0, 0.8]):  # a 20% drop
            store.add_run(make_run(1e9 + i, scale=scale, site="local"))
        store.add_run(make_run(1e9, scale=0.1, site="other"))
    strict, loose = _site_file(tmp_path, 10, db), _site_file(tmp_path, 30, db)
    assert main(["bench", "report", "--site", strict]) == 3  # db from the site file
    assert "below -10%" in capsys.readouterr().out
    assert main(["bench", "report", "--site", loose]) == 0
    out = capsys.readouterr().out
    assert "below -30%" in out and "site other" not in out  # filtered to the site's runs
    assert main(["bench", "report", "--site", loose, "--threshold", "5"]) == 3  # option wins


def test_unknown_site_name_filters_with_defaults_but_missing_file_is_an_error(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    with open_store(db) as store:
        store.add_run(make_run(1e9, site="remote"))
    assert main(["bench", "report", "--db", str(db), "--site", "remote"]) == 0
    assert "no config for site 'remote'" in capsys.readouterr().err
    assert main(["bench", "report", "--db", str(db), "--site", str(tmp_path / "x.yaml")]) == 2


def test_site_config_option_is_gone(capsys):
    assert main(["bench", "report", "--site-config", "x.yaml"]) == 2
    assert "unknown option --site-config" in capsys.readouterr().err
