"""Sweep grids: --sweep options and --sweep-file YAML into the ordered tasks of a job array;
bad grids are one InputError naming the option or FILE:LINE."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_supernode.errors import InputError
from slurm_supernode.launch.param_grid import MAX_TASKS, build_grid, expand_values

ROOT = Path(__file__).resolve().parents[2]


def test_values_ranges_and_steps_keep_the_text_as_written():
    assert expand_values("1e-4,3e-4", "x") == ["1e-4", "3e-4"]  # no float round trip
    assert expand_values("0-3", "x") == ["0", "1", "2", "3"]
    assert expand_values("0-8:4,10", "x") == ["0", "4", "8", "10"]
    assert expand_values("-2--1", "x") == ["-2", "-1"]
    assert expand_values("a-b,v1.2", "x") == ["a-b", "v1.2"]  # not a range: kept


def test_options_make_every_combination_first_name_slowest():
    grid = build_grid(["lr=1e-4,3e-4", "seed=0-2"])
    assert grid.names == ("lr", "seed")
    assert len(grid) == 6
    assert grid.params(0) == {"lr": "1e-4", "seed": "0"}
    assert grid.params(2) == {"lr": "1e-4", "seed": "2"}
    assert grid.params(3) == {"lr": "3e-4", "seed": "0"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["lr"], "bad value 'lr'"),
        (["1lr=3"], "bad value"),
        (["lr=1,,2"], "empty value"),
        (["seed=3-1"], "range '3-1' is empty"),
        (["lr=1,1"], "value '1' of 'lr' is given twice"),
        (["lr=1", "lr=2"], "parameter 'lr' is given twice"),
        (["lr=1", "LR=2"], "names are case-blind"),
        ([f"a=0-{MAX_TASKS}"], "too many values"),
        (["a=0-999", "b=0-999"], f"more than {MAX_TASKS}"),
    ],
)
def test_bad_options_are_refused_with_the_option_named(options, message):
    with pytest.raises(InputError) as err:
        build_grid(options)
    assert message in str(err.value) and str(err.value).startswith("--sweep")
    assert err.value.hint


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "grid.yaml"
    path.write_text(text)
    return str(path)


def test_yaml_grid_lists_ranges_and_single_values(tmp_path):
    path = write(tmp_path, "grid:\n  lr: [1e-4, 3.0e-4]\n  seed: 0-1\n  model: small\n")
    grid = build_grid([], path)
    assert len(grid) == 4 and grid.names == ("lr", "seed", "model")
    assert grid.params(3) == {"lr": "3.0e-4", "seed": "1", "model": "small"}


def test_yaml_tasks_times_the_options(tmp_path):
    path = write(tmp_path, "tasks:\n  - {lr: 1e-4, bs: 8}\n  - {bs: 16, lr: 3e-4}\n")
    grid = build_grid(["seed=0,1"], path)
    assert [grid.params(i) for i in range(len(grid))] == [
        {"lr": "1e-4", "bs": "8", "seed": "0"},
        {"lr": "1e-4", "bs": "8", "seed": "1"},
        {"lr": "3e-4", "bs": "16", "seed": "0"},
        {"lr": "3e-4", "bs": "16", "seed": "1"},
    ]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("grid:\n  lr: [1, 2\n", 3, "YAML syntax error"),
        ("- 1\n", 1, "a mapping with 'grid:' or 'tasks:'"),
        ("grid:\n  lr: [1]\nsweep:\n  x: 1\n", 3, "unknown key 'sweep'"),
        ("grid:\n  lr: [1, 2]\n  seed: [0, 0]\n", 3, "value '0' of 'seed' is given twice"),
        ("grid:\n  lr: []\n", 2, "'lr' has no values"),
        ("grid:\n  lr:\n    - [1, 2]\n", 3, "a value of 'lr' is a list"),
        ("grid:\n  lr: [1, ~]\n", 2, "a value of 'lr' is empty"),
        ("grid:\n  lr: [1]\n  lr: [2]\n", 3, "duplicate key 'lr'"),
        ("grid:\n  bad-name: [1]\n", 2, "bad parameter name 'bad-name'"),
        ("tasks:\n  - {lr: 1}\n  - {lr: 2, bs: 4}\n", 3, "this task names bs, lr"),
        ("tasks:\n  - {lr: 1}\n  - {lr: 1}\n", 3, "the same task is listed twice"),
        ("tasks:\n  - 5\n", 2, "each task is a mapping"),
        ("grid: !!python/object:os.system {}\n", 1, "YAML tag"),
    ],
)
def test_bad_files_name_their_line(tmp_path, text, line, message):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as err:
        build_grid([], path)
    assert str(err.value).startswith(f"{path}:{line}: "), str(err.value)
    assert message in str(err.value)


def test_option_name_that_the_file_already_has_is_refused(tmp_path):
    path = write(tmp_path, "grid:\n  lr: [1, 2]\n")
    with pytest.raises(InputError, match="'lr' is given twice"):
        build_grid(["lr=3"], path)


def test_cli_says_one_line_with_the_yaml_line_and_exits_2(tmp_path):
    (tmp_path / "t.py").write_text("print(1)\n")
    path = write(tmp_path, "grid:\n  lr: [1e-4]\n  seed: 5-2\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), SLURM_CONF="/nonexistent/slurm.conf")
    out = subprocess.run(
        [sys.executable, "-m", "slurm_supernode", "--site", "local", "--dry-run",
         "--sweep-file", path, "t.py"],
        capture_output=True, text=True, cwd=tmp_path, env=env,
    )  # fmt: skip
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert lines == [
        f"snrun: error: {path}:3: range '5-2' is empty (hint: {lines[0].split('hint: ')[1]}"
    ]
    assert "Traceback" not in out.stderr
