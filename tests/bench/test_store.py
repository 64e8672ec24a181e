"""The results history: round trip, schema versions and migrations, concurrent writers."""

from __future__ import annotations

import multiprocessing
import sqlite3

import pytest

from slurm_supernode.bench.store import MIGRATIONS, SCHEMA_VERSION, migrate, open_store
from slurm_supernode.errors import InputError
from tests.bench.helpers import make_run


def test_round_trip_and_queries(tmp_path):
    db = tmp_path / "sub" / "bench.sqlite"
    first, second = make_run(1000.0), make_run(2000.0, scale=0.5, wrong=3)
    with open_store(db) as store:
        assert store.add_run(first) == first.run_id
        store.add_run(second)
        assert store.get_run(first.run_id) == first
        assert store.get_run(second.run_id) == second
        assert [r.run_id for r in store.runs()] == [first.run_id, second.run_id]
        assert [r.good for r in store.runs()] == [True, False]
        rows = store.results(collective="all_gather", size=1 << 20)
        assert [r.run_id for r in rows] == [first.run_id, second.run_id]
        assert rows[1].busbw == pytest.approx(rows[0].busbw / 2)
        assert rows[0].latency_us > 0 and rows[0].comm_version == "nccl 2.28.9"
        assert store.results(good=True, before=1500.0) == store.results(run_id=first.run_id)
        with pytest.raises(KeyError):
            store.get_run("nope")
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_schema_version_and_migration_from_an_older_file(tmp_path):
    db = tmp_path / "old.sqlite"
    conn = sqlite3.connect(db, isolation_level=None)
    assert migrate(conn, target=1) == 1
    conn.execute(
        "INSERT INTO runs VALUES ('r1', 5.0, 'lab', 'sn0', 1, 2, 'gloo', 'wall', '', '[]',"
        " '', '', '', 1)"
    )
    conn.close()
    with open_store(db) as store:
        assert store.version == SCHEMA_VERSION == len(MIGRATIONS) >= 2
        assert [r.run_id for r in store.runs()] == ["r1"]  # data kept
        assert store.results() == []  # the view added by migration 2 works


def test_newer_schema_and_garbage_are_refused(tmp_path):
    db = tmp_path / "new.sqlite"
    with open_store(db) as store:
        store._conn.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(InputError, match="newer"):
        open_store(db)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(InputError) as err:
        open_store(junk)
    assert err.value.where == str(junk)
    with pytest.raises(InputError):
        open_store(tmp_path / "missing.sqlite", create=False)


def _writer(db: str, index: int) -> None:
    with open_store(db) as store:
        for j in range(3):
            store.add_run(make_run(index * 10.0 + j))


def test_sixteen_concurrent_writers_lose_nothing(tmp_path):
    db = str(tmp_path / "shared.sqlite")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(db, i)) for i in range(16)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0] * 16
    with open_store(db) as store:
        runs = store.runs()
        assert len(runs) == 16 * 3 and len({r.run_id for r in runs}) == 48
        assert len(store.results()) == 48 * len(make_run(0).results)
