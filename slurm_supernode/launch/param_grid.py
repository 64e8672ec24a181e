"""A sweep's parameter grid: ``--sweep NAME=VALUES`` options and ``--sweep-file`` YAML, turned
into the ordered list of tasks a job array runs. Pure (reading the named file aside).

Values are kept as the text the user wrote (``1e-4`` stays ``1e-4``: no float round trip), so
the program gets exactly what was typed. ``A-B`` is an inclusive integer range, like Slurm's
``--array``. A YAML file holds either ``grid:`` (every combination of its lists) or ``tasks:``
(an explicit list of parameter sets); ``--sweep`` options multiply either. Every problem is one
``InputError`` naming the option or ``FILE:LINE``.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from slurm_supernode.errors import InputError

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RANGE = re.compile(r"^(-?\d+)-(-?\d+)(?::(\d+))?$")
# Far above any Slurm's MaxArraySize (default 1001), low enough that nothing is built for an
# absurd grid (the product is checked before a task exists).
MAX_TASKS = 100_000
_FILE_HINT = "see docs/snrun.md, section Sweeps"

Params = tuple[tuple[str, str], ...]  # one task: (name, value) in the grid's name order


@dataclass(frozen=True)
class Grid:
    """The tasks of a sweep, in array order: task i of the job array runs ``tasks[i]``."""

    names: tuple[str, ...]
    tasks: tuple[Params, ...]

    def params(self, index: int) -> dict[str, str]:
        return dict(self.tasks[index])

    def __len__(self) -> int:
        return len(self.tasks)


def expand_values(text: str, where: str) -> list[str]:
    """``1e-4,3e-4`` -> two values; ``0-3`` -> 0,1,2,3; ``0-8:2`` -> 0,2,4,6,8."""
    values: list[str] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise InputError(
                f"empty value in {text!r}",
                where=where,
                hint="values are separated by single commas: lr=1e-4,3e-4",
            )
        m = _RANGE.match(item)
        if m is None:
            values.append(item)
            continue
        first, last, step = int(m[1]), int(m[2]), int(m[3] or 1)
        if step < 1 or last < first:
            raise InputError(
                f"range {item!r} is empty",
                where=where,
                hint="write FIRST-LAST with FIRST <= LAST (and :STEP >= 1), e.g. seed=0-3",
            )
        if (last - first) // step + 1 > MAX_TASKS:
            raise InputError(
                f"range {item!r} has too many values",
                where=where,
                hint=f"a sweep has at most {MAX_TASKS} tasks; Slurm's MaxArraySize is usually 1001",
            )
        values += [str(v) for v in range(first, last + 1, step)]
    return values


def parse_option(item: str) -> tuple[str, list[str]]:
    """One ``--sweep NAME=VALUES``."""
    name, sep, text = item.partition("=")
    name = name.strip()
    if not sep or not NAME.match(name):
        raise InputError(
            f"bad value {item!r}",
            where="--sweep",
            hint="use NAME=V1,V2 or NAME=FIRST-LAST with NAME a plain name (lr, seed)",
        )
    return name, expand_values(text, f"--sweep {name}")


def product(dims: Sequence[tuple[str, list[str]]], where: str = "--sweep") -> Grid:
    """Every combination, the first dimension varying slowest (like nested loops)."""
    _check_names([n for n, _ in dims], where)
    for name, values in dims:
        _check_values(name, values, where)
    _check_count(math.prod(len(v) for _, v in dims), where)
    names = tuple(n for n, _ in dims)
    tasks = tuple(
        tuple(zip(names, combo, strict=True)) for combo in itertools.product(*(v for _, v in dims))
    )
    return Grid(names=names, tasks=tasks)


def combine(base: Grid, extra: Grid, where: str) -> Grid:
    """Each task of ``base`` with each of ``extra`` (the file's tasks times --sweep options)."""
    if not base.tasks:
        return extra
    if not extra.tasks:
        return base
    _check_names([*base.names, *extra.names], where)
    _check_count(len(base) * len(extra), where)
    return Grid(
        names=base.names + extra.names,
        tasks=tuple(a + b for a in base.tasks for b in extra.tasks),
    )


def build_grid(options: Iterable[str] = (), file: str | None = None) -> Grid:
    """The grid of ``--sweep-file`` (if any) times the ``--sweep`` options."""
    from_options = product([parse_option(item) for item in options])
    grid = from_options if file is None else combine(read_grid_file(file), from_options, "--sweep")
    if not grid.tasks:
        raise InputError(
            "the sweep has no tasks", where="--sweep", hint="give --sweep NAME=V1,V2 or a file"
        )
    return grid


def _check_names(names: list[str], where: str) -> None:
    seen: dict[str, str] = {}
    for name in names:
        key = name.upper()  # the program sees SNRUN_PARAM_<NAME>: lr and LR would collide
        if key in seen:
            raise InputError(
                f"parameter {name!r} is given twice"
                + ("" if seen[key] == name else f" (as {seen[key]!r}: names are case-blind)"),
                where=where,
                hint="each parameter once; list all its values in one place",
            )
        seen[key] = name


def _check_values(name: str, values: list[str], where: str) -> None:
    dup = next((v for i, v in enumerate(values) if v in values[:i]), None)
    if dup is not None:
        raise InputError(
            f"value {dup!r} of {name!r} is given twice",
            where=where,
            hint="two identical tasks would only repeat each other",
        )


def _check_count(count: int, where: str) -> None:
    if count > MAX_TASKS:
        raise InputError(
            f"the grid has {count} tasks, more than {MAX_TASKS}",
            where=where,
            hint="split the sweep; Slurm's MaxArraySize is usually 1001",
        )


# ----- the YAML file --------------------------------------------------------------------------


def read_grid_file(path: str) -> Grid:
    """``grid:`` (name -> list, range text or one value) or ``tasks:`` (list of mappings)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise InputError(
            f"cannot read the sweep file: {why}", where=path, hint="give a readable YAML file"
        ) from None
    return parse_grid_text(text, path)


def parse_grid_text(text: str, file: str) -> Grid:
    from slurm_supernode.site.yaml_guards import (
        YAML_LOADER,
        alias_blowup,
        tag_problems,
        text_problems,
    )

    bad = text_problems(text, file)
    try:
        root = None if bad else yaml.compose(text, Loader=YAML_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        what = " ".join(x for x in (exc.context, exc.problem) if x)
        raise InputError(
            f"YAML syntax error: {what}", where=f"{file}:{line}", hint="check indentation"
        ) from None
    except (yaml.YAMLError, RecursionError):
        raise InputError("not a YAML file", where=file, hint=_FILE_HINT) from None
    problems = bad or (tag_problems(root, file) if root is not None else [])
    problem = problems[0] if problems else None
    if problem is None and root is not None:
        problem = alias_blowup(root, file)
    if problem is not None:
        raise InputError(problem.message, where=f"{file}:{problem.line}", hint=problem.hint)
    if not isinstance(root, yaml.MappingNode):
        raise InputError(
            "a sweep file is a mapping with 'grid:' or 'tasks:'",
            where=f"{file}:{_line(root)}",
            hint=_FILE_HINT,
        )
    keys = _mapping(root, file)
    unknown = [k for k in keys if k not in ("grid", "tasks")]
    if unknown or len(keys) != 1:
        knode = keys[unknown[0]][0] if unknown else root
        raise InputError(
            f"unknown key {unknown[0]!r}" if unknown else "give one of 'grid:' or 'tasks:'",
            where=f"{file}:{_line(knode)}",
            hint="'grid:' (every combination) or 'tasks:' (a list of parameter sets)",
        )
    key, (_, value) = next(iter(keys.items()))
    return _grid_section(value, file) if key == "grid" else _tasks_section(value, file)


def _grid_section(node: yaml.Node, file: str) -> Grid:
    if not isinstance(node, yaml.MappingNode) or not node.value:
        raise InputError(
            "'grid:' must map parameter names to values",
            where=f"{file}:{_line(node)}",
            hint="grid: {lr: [1e-4, 3e-4], seed: 0-3}",
        )
    dims = []
    for name, (knode, vnode) in _mapping(node, file).items():
        where = f"{file}:{_line(knode)}"
        _check_name(name, where)
        if isinstance(vnode, yaml.SequenceNode):
            values = [_scalar(v, file, name) for v in vnode.value]
            if not values:
                raise InputError(f"{name!r} has no values", where=where, hint="list one or more")
        else:
            values = expand_values(_scalar(vnode, file, name), where)
        try:
            _check_values(name, values, where)
        except InputError as exc:
            raise InputError(exc.message, where=where, hint=exc.hint) from None
        dims.append((name, values))
    return product(dims, where=f"{file}:{_line(node)}")


def _tasks_section(node: yaml.Node, file: str) -> Grid:
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise InputError(
            "'tasks:' must be a list of parameter sets",
            where=f"{file}:{_line(node)}",
            hint="tasks: [{lr: 1e-4, seed: 0}, {lr: 3e-4, seed: 1}]",
        )
    _check_count(len(node.value), f"{file}:{_line(node)}")
    names: tuple[str, ...] | None = None
    tasks: list[Params] = []
    for item in node.value:
        where = f"{file}:{_line(item)}"
        if not isinstance(item, yaml.MappingNode) or not item.value:
            raise InputError(
                "each task is a mapping of parameter names to values",
                where=where,
                hint="- {lr: 1e-4, seed: 0}",
            )
        pairs = _mapping(item, file)
        for name, (knode, _) in pairs.items():
            _check_name(name, f"{file}:{_line(knode)}")
        if names is None:
            names = tuple(pairs)
            _check_names(list(names), where)
        elif set(pairs) != set(names):
            raise InputError(
                f"this task names {', '.join(sorted(pairs))}, the first names {', '.join(names)}",
                where=where,
                hint="every task gives the same parameters",
            )
        task = tuple((n, _scalar(pairs[n][1], file, n)) for n in names)
        if task in tasks:
            raise InputError("the same task is listed twice", where=where, hint="remove the repeat")
        tasks.append(task)
    return Grid(names=names or (), tasks=tuple(tasks))


def _mapping(node: yaml.MappingNode, file: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    for knode, vnode in node.value:
        if not isinstance(knode, yaml.ScalarNode):
            raise InputError(
                "keys must be plain names", where=f"{file}:{_line(knode)}", hint=_FILE_HINT
            )
        if knode.value in out:
            raise InputError(
                f"duplicate key {knode.value!r}",
                where=f"{file}:{_line(knode)}",
                hint="each key may appear once",
            )
        out[knode.value] = (knode, vnode)
    return out


def _scalar(node: yaml.Node, file: str, name: str) -> str:
    """The value as written (``1e-4``, ``true``, ``"a b"`` -> ``a b``); null is refused."""
    where = f"{file}:{_line(node)}"
    if not isinstance(node, yaml.ScalarNode):
        kind = "list" if isinstance(node, yaml.SequenceNode) else "mapping"
        raise InputError(
            f"a value of {name!r} is a {kind}",
            where=where,
            hint="values are single words or numbers; quote text with spaces",
        )
    if node.tag.endswith(":null") and not node.style:  # ~, null, nothing (quoted '' is text)
        raise InputError(
            f"a value of {name!r} is empty", where=where, hint="give a value, or quote ''"
        )
    return str(node.value)


def _check_name(name: str, where: str) -> None:
    if not NAME.match(name):
        raise InputError(
            f"bad parameter name {name!r}",
            where=where,
            hint="plain names (letters, digits, _): the program gets SNRUN_PARAM_<NAME>",
        )


def _line(node: yaml.Node | None) -> int:
    return node.start_mark.line + 1 if node is not None else 1
