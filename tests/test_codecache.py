"""The command line's cache of compiled dataclass methods: a second process compiles nothing,
its dataclasses behave as compiled ones do, and a cache that cannot be used is ignored."""

from __future__ import annotations

import json
import marshal
import subprocess
import sys
from pathlib import Path

from slurm_supernode import codecache

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = """
import dataclasses, sys
from slurm_supernode import codecache
cache = codecache.install()
@dataclasses.dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 2
p = Point(1)
try:
    p.x = 5
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
assert p == Point(1, 2) and hash(p) == hash(Point(1, 2)) and repr(p) == "Point(x=1, y=2)"
print(cache is not None and cache.added, frozen)
"""


def cache_file(tmp_path: Path) -> Path:
    path = codecache.cache_file({"SNRUN_CACHE_DIR": str(tmp_path)})
    assert path is not None
    return path


def run(tmp_path: Path, **env: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "SNRUN_CACHE_DIR": str(tmp_path), **env},
    )
    return proc.stdout.strip()


def test_a_second_process_compiles_nothing_and_behaves_the_same(tmp_path):
    first = run(tmp_path)
    added, frozen = first.split()
    assert int(added) >= 4 and frozen == "True"  # __init__, __repr__, __eq__, __hash__, ...
    assert cache_file(tmp_path).is_file()
    assert run(tmp_path) == "0 True"  # every method came from the file


def test_an_unreadable_cache_is_ignored_and_replaced(tmp_path):
    path = cache_file(tmp_path)
    path.write_bytes(b"not marshal data")
    added, _ = run(tmp_path).split()
    assert int(added) >= 4
    assert run(tmp_path) == "0 True"


def test_off_or_not_the_users_own(tmp_path):
    assert run(tmp_path, SNRUN_CACHE_DIR="off") == "False True"
    shared = tmp_path / "shared"
    (shared / "dataclasses").mkdir(parents=True)
    (shared / "dataclasses").chmod(0o777)  # others could plant code: never used
    assert run(tmp_path, SNRUN_CACHE_DIR=str(shared)) == "False True"
    assert list((shared / "dataclasses").iterdir()) == []


def test_texts_this_run_did_not_use_are_dropped_past_the_bound(tmp_path):
    """Old versions' classes pile up in the file; past MOST_ENTRIES a run that writes it keeps
    only what it used (a file of thousands of entries cost more to load than it saved)."""
    path = cache_file(tmp_path)
    code = marshal.dumps(compile("pass", "<string>", "exec"))
    stale = {f"def old_{i}(): pass": code for i in range(codecache.MOST_ENTRIES + 1)}
    path.write_bytes(marshal.dumps(stale))
    added, _ = run(tmp_path).split()
    kept = marshal.loads(path.read_bytes())
    assert int(added) >= 4 and len(kept) == int(added)  # this run's texts only
    assert all(isinstance(v, bytes) for v in kept.values())
    assert run(tmp_path) == "0 True"


# The command line as `python -m slurm_supernode` runs it, every dataclass creation watched:
# was the cache installed by then, how often was the file loaded, what did the run compile.
ENTRY = """
import dataclasses, json, runpy, sys
from slurm_supernode import codecache
made, loads = [], []
process, init = dataclasses._process_class, codecache.CompiledCode.__init__
def watched(cls, *args, **kwargs):
    made.append([f"{cls.__module__}.{cls.__qualname__}", "exec" in vars(dataclasses)])
    return process(cls, *args, **kwargs)
def load(self, path):
    loads.append(str(path))
    init(self, path)
dataclasses._process_class, codecache.CompiledCode.__init__ = watched, load
sys.argv = ["snrun", "--site", "local", "-S", "1", "--dry-run", "t.py"]
try:
    runpy.run_module("slurm_supernode", run_name="__main__")
except SystemExit as exc:
    code = exc.code
cache = vars(dataclasses)["exec"].__self__
print(json.dumps({"code": code, "made": made, "loads": loads, "added": cache.added}),
      file=sys.stderr)
"""


def test_the_command_line_makes_every_dataclass_through_the_cache_loaded_once(tmp_path):
    def dry_run() -> dict:
        proc = subprocess.run(
            [sys.executable, "-c", ENTRY],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={
                "PYTHONPATH": str(ROOT),
                "SNRUN_CACHE_DIR": str(tmp_path / "cache"),
                "SNRUN_JOBS_DIR": str(tmp_path),
                "SLURM_CONF": "/nonexistent/slurm.conf",
            },
        )
        return json.loads(proc.stderr.strip().splitlines()[-1])

    (tmp_path / "t.py").write_text("print('hello')\n")
    first = dry_run()
    ours = [name for name, _ in first["made"] if name.startswith("slurm_supernode.")]
    assert first["code"] == 0 and len(ours) >= 20, first
    before = [name for name, cached in first["made"] if not cached]
    assert before == [], f"made before the cache was installed: {before}"
    assert len(first["loads"]) == 1 and first["added"] > 0
    second = dry_run()
    assert second["code"] == 0 and len(second["loads"]) == 1 and second["added"] == 0
