"""History of benchmark runs in SQLite (stdlib), safe for many writers.

Why this shape: nightly jobs on several clusters append to one file on shared storage, the
report reads it. Writes take ``FileLock(db + '.lock')`` (SQLite's own locking is unreliable
on network file systems) inside one transaction each; WAL mode lets readers run during a
write. The schema is versioned: ``schema_version`` holds the number of migrations applied,
``MIGRATIONS`` lists them in order and ``open_store`` applies the missing ones.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from slurm_supernode.bench.model import BenchResult, BenchRun, Versions
from slurm_supernode.errors import InputError

MIGRATIONS: tuple[str, ...] = (
    # 1: runs and their results
    """
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        time REAL NOT NULL,
        site TEXT NOT NULL,
        supernode TEXT NOT NULL,
        nodes INTEGER NOT NULL,
        world_size INTEGER NOT NULL,
        backend TEXT NOT NULL,
        timing TEXT NOT NULL,
        job_id TEXT NOT NULL,
        hosts TEXT NOT NULL,
        torch_version TEXT NOT NULL,
        comm_version TEXT NOT NULL,
        driver_version TEXT NOT NULL,
        good INTEGER NOT NULL
    );
    CREATE TABLE results (
        run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
        scope TEXT NOT NULL,
        collective TEXT NOT NULL,
        size INTEGER NOT NULL,
        count INTEGER NOT NULL,
        dtype TEXT NOT NULL,
        group_size INTEGER NOT NULL,
        groups INTEGER NOT NULL,
        latency_us REAL NOT NULL,
        algbw REAL NOT NULL,
        busbw REAL NOT NULL,
        wrong INTEGER NOT NULL,
        PRIMARY KEY (run_id, scope, collective, dtype, size)
    );
    """,
    # 2: the report's lookups (latest runs of a site, one key across runs) and a flat view
    """
    CREATE INDEX runs_by_site_time ON runs (site, time);
    CREATE INDEX results_by_key ON results (scope, collective, dtype, size);
    CREATE VIEW history AS
        SELECT r.run_id, r.time, r.site, r.supernode, r.nodes, r.job_id, r.good,
               r.torch_version, r.comm_version, r.driver_version,
               x.scope, x.collective, x.size, x.dtype, x.group_size,
               x.busbw, x.algbw, x.latency_us, x.wrong
        FROM results x JOIN runs r USING (run_id);
    """,
    # 3: who measured (bench, doctor) and with which settings: a baseline takes only its own
    """
    ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'bench';
    ALTER TABLE runs ADD COLUMN params TEXT NOT NULL DEFAULT '';
    DROP VIEW history;
    CREATE VIEW history AS
        SELECT r.run_id, r.time, r.site, r.supernode, r.nodes, r.job_id, r.good,
               r.torch_version, r.comm_version, r.driver_version,
               x.scope, x.collective, x.size, x.dtype, x.group_size,
               x.busbw, x.algbw, x.latency_us, x.wrong, r.kind, r.params
        FROM results x JOIN runs r USING (run_id);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


@dataclass(frozen=True, slots=True)
class ResultRow:
    """One stored result with its run's context: a row of the ``history`` view."""

    run_id: str
    time: float
    site: str
    supernode: str
    nodes: int
    job_id: str
    good: bool
    torch_version: str
    comm_version: str
    driver_version: str
    scope: str
    collective: str
    size: int
    dtype: str
    group_size: int
    busbw: float
    algbw: float
    latency_us: float
    wrong: int
    kind: str = "bench"
    params: str = ""

    @property
    def key(self) -> tuple:
        """Results with equal keys are comparable across runs (the baseline's key): same
        place, same measurement, and the same kind of run with the same settings."""
        return (self.site, self.supernode, self.nodes, self.kind, self.params, self.scope,
                self.collective, self.dtype, self.size)  # fmt: skip


@dataclass(frozen=True, slots=True)
class RunInfo:
    """A stored run without its results."""

    run_id: str
    time: float
    site: str
    supernode: str
    nodes: int
    world_size: int
    backend: str
    timing: str
    job_id: str
    hosts: tuple[str, ...]
    versions: Versions
    good: bool
    kind: str = "bench"
    params: str = ""

    @property
    def group(self) -> tuple:
        """Runs of one group share a report: same place, same kind, same settings."""
        return (self.site, self.supernode, self.nodes, self.kind, self.params)


def schema_version(conn: sqlite3.Connection) -> int:
    has = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_version'"
    ).fetchone()
    if not has:
        return 0
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def migrate(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Apply migrations ``current+1 .. target`` in one transaction each; returns the version."""
    current = schema_version(conn)
    if current > len(MIGRATIONS):
        raise InputError(
            f"results database has schema version {current}, newer than this snrun knows "
            f"({len(MIGRATIONS)})",
            hint="upgrade slurm-supernode",
        )
    for version in range(current + 1, target + 1):
        script = MIGRATIONS[version - 1]
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in (s.strip() for s in script.split(";")):
                if statement:
                    conn.execute(statement)
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            conn.execute("DELETE FROM schema_version")
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return schema_version(conn)


class ResultStore:
    """A results database; use ``open_store`` to get one (and ``with`` to close it)."""

    def __init__(self, path: Path, conn: sqlite3.Connection, lock: FileLock):
        self.path, self._conn, self._lock = path, conn, lock

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._conn.close()

    @property
    def version(self) -> int:
        return schema_version(self._conn)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def add_run(self, run: BenchRun) -> str:
        """Store a run and all its results atomically; returns its run id."""
        v = run.versions
        with self._write() as conn:
            conn.execute(
                f"INSERT INTO runs ({', '.join(_RUN_COLUMNS)}) VALUES "
                f"({','.join('?' * len(_RUN_COLUMNS))})",
                (run.run_id, run.time, run.site, run.supernode, run.nodes, run.world_size,
                 run.backend, run.timing, run.job_id, json.dumps(list(run.hosts)), v.torch,
                 v.comm, v.driver, int(run.good), run.kind, run.params),
            )  # fmt: skip
            conn.executemany(
                "INSERT INTO results VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (run.run_id, r.scope, r.collective, r.size, r.count, r.dtype, r.group_size,
                     r.groups, r.time_us, r.algbw, r.busbw, r.wrong)
                    for r in run.results
                ],
            )  # fmt: skip
        return run.run_id

    def runs(self, *, site: str | None = None, good: bool | None = None) -> list[RunInfo]:
        """Runs, oldest first."""
        sql = f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs WHERE 1=1"
        args: list[str | int] = []
        if site is not None:
            sql, args = sql + " AND site = ?", [*args, site]
        if good is not None:
            sql, args = sql + " AND good = ?", [*args, int(good)]
        rows = self._conn.execute(sql + " ORDER BY time, run_id", args).fetchall()
        return [_run_info(row) for row in rows]

    def get_run(self, run_id: str) -> BenchRun:
        """A stored run with all its results (KeyError when unknown)."""
        row = self._conn.execute(
            f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        if row is None:
            raise KeyError(run_id)
        info = _run_info(row)
        results = self._conn.execute(
            "SELECT scope, collective, size, count, dtype, group_size, groups, latency_us,"
            " algbw, busbw, wrong FROM results WHERE run_id = ? ORDER BY rowid",
            (run_id,),
        ).fetchall()
        return BenchRun(
            run_id=info.run_id,
            time=info.time,
            site=info.site,
            supernode=info.supernode,
            nodes=info.nodes,
            world_size=info.world_size,
            backend=info.backend,
            timing=info.timing,
            job_id=info.job_id,
            hosts=info.hosts,
            versions=info.versions,
            kind=info.kind,
            params=info.params,
            results=tuple(
                BenchResult(scope=r[0], collective=r[1], size=r[2], count=r[3], dtype=r[4],
                            group_size=r[5], groups=r[6], time_us=r[7], algbw=r[8], busbw=r[9],
                            wrong=r[10])
                for r in results
            ),
        )  # fmt: skip

    def results(
        self,
        *,
        site: str | None = None,
        supernode: str | None = None,
        nodes: int | None = None,
        scope: str | None = None,
        collective: str | None = None,
        dtype: str | None = None,
        size: int | None = None,
        run_id: str | None = None,
        good: bool | None = None,
        before: float | None = None,
    ) -> list[ResultRow]:
        """Stored results matching every given filter, oldest run first."""
        filters = {
            "site": site,
            "supernode": supernode,
            "nodes": nodes,
            "scope": scope,
            "collective": collective,
            "dtype": dtype,
            "size": size,
            "run_id": run_id,
            "good": None if good is None else int(good),
        }
        sql = "SELECT " + ", ".join(_ROW_FIELDS) + " FROM history WHERE 1=1"
        args: list = []
        for column, value in filters.items():
            if value is not None:
                sql += f" AND {column} = ?"
                args.append(value)
        if before is not None:
            sql += " AND time < ?"
            args.append(before)
        sql += " ORDER BY time, run_id, scope, collective, dtype, size"
        return [_result_row(row) for row in self._conn.execute(sql, args)]


_ROW_FIELDS = tuple(ResultRow.__dataclass_fields__)
_RUN_COLUMNS = (
    "run_id", "time", "site", "supernode", "nodes", "world_size", "backend", "timing", "job_id",
    "hosts", "torch_version", "comm_version", "driver_version", "good", "kind", "params",
)  # fmt: skip


def _result_row(row) -> ResultRow:
    data = dict(zip(_ROW_FIELDS, row, strict=True))
    data["good"] = bool(data["good"])
    return ResultRow(**data)


def _run_info(row) -> RunInfo:
    (run_id, time_, site, supernode, nodes, world, backend, timing, job_id, hosts, tv, cv, dv,
     good, kind, params) = row  # fmt: skip
    return RunInfo(
        run_id=run_id,
        time=time_,
        site=site,
        supernode=supernode,
        nodes=nodes,
        world_size=world,
        backend=backend,
        timing=timing,
        job_id=job_id,
        hosts=tuple(json.loads(hosts)),
        versions=Versions(torch=tv, comm=cv, driver=dv),
        good=bool(good),
        kind=kind,
        params=params,
    )


def open_store(path: str | Path, *, create: bool = True) -> ResultStore:
    """Open (and create or migrate, under the file lock) the results database at ``path``."""
    path = Path(path).expanduser()
    if not path.exists() and not create:
        raise InputError(
            "no results database here",
            where=str(path),
            # `bench run` is the in-job measurement (torchrun); an admin submits a job
            hint="measure first: 'snrun bench submit' (a bench job on whole super nodes) or"
            " 'snrun doctor'; or name the database with --db / SNRUN_BENCH_DB",
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create its folder: {exc.strerror}", where=str(path)) from None
    lock = FileLock(str(path) + ".lock", timeout=120)
    conn = sqlite3.connect(str(path), timeout=60, isolation_level=None)
    try:
        with lock:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA foreign_keys=ON")
            migrate(conn)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise InputError(f"not a usable results database ({exc})", where=str(path)) from None
    except BaseException:
        conn.close()
        raise
    return ResultStore(path, conn, lock)
