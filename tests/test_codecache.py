"""The command line's cache of compiled dataclass methods: a second process compiles nothing,
its dataclasses behave as compiled ones do, and a cache that cannot be used is ignored."""

from __future__ import annotations

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
