"""Prometheus textfiles for node_exporter's textfile collector: the one writer of every file
snrun writes (bench report, doctor, health), merging under a file lock.

Why one writer: several commands may point at the same file (a node's health check, the
nightly bench report, a doctor run), and the collector refuses a whole file when a series
appears twice or a family's HELP/TYPE is repeated, so every alert of the file would vanish.
Each command owns a ``Scope`` (a metric name prefix and label values, e.g. the health series
of node n3): writing replaces the series in its scope and keeps every other series of the
file, families are rendered once each, and the result is checked against the exposition
rules before the atomic rename. A file that is not in this format (someone else's) is never
overwritten.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from slurm_supernode.errors import InputError

_NAME_FIRST = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_:")
_NAME_REST = _NAME_FIRST | set("0123456789")
TYPES = ("gauge", "counter", "untyped")
LOCK_TIMEOUT_S = 60


class PromFileError(ValueError):
    """Text that breaks the exposition format (or is not a file snrun wrote)."""


Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    labels: Labels
    value: float


@dataclass(frozen=True, slots=True)
class Family:
    """One metric: its HELP text, TYPE and series."""

    name: str
    help: str
    series: tuple[Series, ...]
    type: str = "gauge"


@dataclass(frozen=True, slots=True)
class Scope:
    """The series one writer owns: names starting with ``prefix`` whose labels include
    ``labels`` (all of them, equal values)."""

    prefix: str
    labels: Labels = ()

    def owns(self, series: Series) -> bool:
        have = dict(series.labels)
        return series.name.startswith(self.prefix) and all(have.get(k) == v for k, v in self.labels)


def labels(**values: object) -> Labels:
    """Keyword labels as a ``Labels`` tuple (values as text)."""
    return tuple((k, str(v)) for k, v in values.items())


def family(name: str, help_text: str, rows: Iterable[tuple[Labels, float]]) -> Family:
    return Family(name, help_text, tuple(Series(name, lab, value) for lab, value in rows))


# -- rendering ------------------------------------------------------------------------------
def escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return format(value, ".10g")


def render(families: Sequence[Family]) -> str:
    """The exposition text: families in the given order, each with HELP and TYPE once."""
    lines: list[str] = []
    for fam in families:
        if not fam.series:
            continue
        lines += [f"# HELP {fam.name} {_escape_help(fam.help)}", f"# TYPE {fam.name} {fam.type}"]
        for s in fam.series:
            body = ",".join(f'{k}="{escape_label(v)}"' for k, v in s.labels)
            lines.append(f"{s.name}{{{body}}} {format_value(s.value)}" if body else
                         f"{s.name} {format_value(s.value)}")  # fmt: skip
    return "\n".join(lines) + "\n" if lines else ""


# -- parsing (the format ``render`` writes: HELP, TYPE, samples) --------------------------------
def _is_name(text: str, first: set[str] = _NAME_FIRST) -> bool:
    return bool(text) and text[0] in first and all(c in _NAME_REST for c in text)


def _parse_labels(text: str, lineno: int) -> tuple[Labels, str]:
    """``a="x",b="y"} 1`` -> (labels, the rest after '}')."""
    out: list[tuple[str, str]] = []
    i = 0
    while True:
        if text[i : i + 1] == "}":
            return tuple(out), text[i + 1 :]
        eq = text.find("=", i)
        if eq < 0 or text[eq + 1 : eq + 2] != '"':
            raise PromFileError(f'line {lineno}: a label is not name="value"')
        name = text[i:eq].strip()
        if not _is_name(name, _NAME_FIRST - {":"}) or ":" in name:
            raise PromFileError(f"line {lineno}: bad label name {name!r}")
        value: list[str] = []
        j = eq + 2
        while True:
            if j >= len(text):
                raise PromFileError(f"line {lineno}: unterminated label value")
            c = text[j]
            if c == "\\":
                nxt = text[j + 1 : j + 2]
                if nxt not in ("\\", '"', "n"):
                    raise PromFileError(f"line {lineno}: bad escape in a label value")
                value.append("\n" if nxt == "n" else nxt)
                j += 2
                continue
            if c == '"':
                break
            value.append(c)
            j += 1
        out.append((name, "".join(value)))
        i = j + 1
        if text[i : i + 1] == ",":
            i += 1


def _parse_value(text: str, lineno: int) -> float:
    word = text.split()
    if len(word) != 1:  # snrun writes no timestamps
        raise PromFileError(f"line {lineno}: expected one value, got {text.strip()!r}")
    try:
        return float(word[0])
    except ValueError:
        raise PromFileError(f"line {lineno}: value {word[0]!r} is not a number") from None


class _Reader:
    """One pass over a textfile's lines (``parse``): the state the rules need."""

    def __init__(self) -> None:
        self.families: dict[str, Family] = {}
        self.meta: dict[str, dict[str, str]] = {"HELP": {}, "TYPE": {}}
        self.seen: set[tuple[str, Labels]] = set()
        self.closed: set[str] = set()
        self.current = ""

    def comment(self, line: str, lineno: int) -> None:
        parts = line.split(" ", 3)
        if len(parts) < 3 or parts[1] not in self.meta:
            return  # a plain comment
        kind, name = parts[1], parts[2]
        if not _is_name(name):
            raise PromFileError(f"line {lineno}: bad metric name {name!r}")
        if name in self.meta[kind]:
            raise PromFileError(f"line {lineno}: second {kind} for {name}")
        if name in self.families:
            raise PromFileError(f"line {lineno}: {kind} for {name} after its samples")
        rest = parts[3] if len(parts) > 3 else ""
        if kind == "TYPE" and rest not in TYPES:
            raise PromFileError(
                f"line {lineno}: type {rest!r} of {name} (snrun writes {', '.join(TYPES)})"
            )
        self.meta[kind][name] = rest.replace("\\n", "\n").replace("\\\\", "\\")

    def sample(self, line: str, lineno: int) -> None:
        brace, space = line.find("{"), line.find(" ")
        if brace >= 0 and (space < 0 or brace < space):
            name = line[:brace]
            lab, rest = _parse_labels(line[brace + 1 :], lineno)
        else:
            name, rest, lab = line[:space], line[space:], ()
        if not _is_name(name):
            raise PromFileError(f"line {lineno}: bad metric name {name!r}")
        if len({k for k, _ in lab}) != len(lab):
            raise PromFileError(f"line {lineno}: a label twice in one series of {name}")
        key = (name, tuple(sorted(lab)))
        if key in self.seen:
            raise PromFileError(f"line {lineno}: series {name}{dict(lab)} appears twice")
        self.seen.add(key)
        if name != self.current:
            if name in self.closed:
                raise PromFileError(f"line {lineno}: samples of {name} are not together")
            self.closed.add(self.current)
            self.current = name
        value = _parse_value(rest, lineno)
        fam = self.families.get(name) or Family(
            name, self.meta["HELP"].get(name, ""), (), self.meta["TYPE"].get(name, "untyped")
        )
        self.families[name] = Family(name, fam.help, (*fam.series, Series(name, lab, value)),
                                     fam.type)  # fmt: skip


def parse(text: str) -> list[Family]:
    """Families of a textfile, checked: names, labels, values, HELP/TYPE once and before the
    family's samples, samples of one family together, no series twice. PromFileError else."""
    reader = _Reader()
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            reader.comment(line, lineno)
        else:
            reader.sample(line, lineno)
    return list(reader.families.values())


def check(text: str) -> None:
    """Raise PromFileError if ``text`` breaks the exposition rules (see ``parse``)."""
    parse(text)


# -- merging and writing --------------------------------------------------------------------------
def merge(old: Sequence[Family], new: Sequence[Family], scope: Scope) -> list[Family]:
    """``old`` without the series ``scope`` owns, plus ``new``; one family per name (the new
    HELP/TYPE win), families in first-seen order, every new series inside ``scope``."""
    for fam in new:
        for s in fam.series:
            if not scope.owns(s):
                raise ValueError(f"{s.name}{dict(s.labels)} is outside the writer's scope {scope}")
    merged: dict[str, Family] = {}
    for fam in old:
        kept = tuple(s for s in fam.series if not scope.owns(s))
        merged[fam.name] = Family(fam.name, fam.help, kept, fam.type)
    for fam in new:
        before = merged.get(fam.name)
        series = (*(before.series if before else ()), *fam.series)
        merged[fam.name] = Family(fam.name, fam.help, series, fam.type)
    return [f for f in merged.values() if f.series]


def write_textfile(
    path: str | Path, families: Sequence[Family], scope: Scope, *, where: str = "--prom"
) -> Path:
    """Merge ``families`` into the textfile at ``path`` (replacing ``scope``'s series), under
    ``FileLock(path + '.lock')``, checked, written atomically (temp file + rename: the temp
    name does not end in .prom, so the collector never reads it)."""
    from filelock import FileLock, Timeout

    from slurm_supernode.fsutil import write_atomic

    target = Path(path)
    try:
        with FileLock(str(target) + ".lock", timeout=LOCK_TIMEOUT_S):
            old: list[Family] = []
            if target.exists():
                try:
                    old = parse(target.read_text(encoding="utf-8"))
                except (PromFileError, UnicodeDecodeError) as exc:
                    raise InputError(
                        f"{target} is not a Prometheus textfile snrun can merge into ({exc})",
                        where=where,
                        hint="give snrun a file of its own (the collector reads every *.prom)",
                    ) from None
            text = render(merge(old, families, scope))
            check(text)
            return write_atomic(target, text)
    except Timeout:
        raise InputError(
            f"{target}.lock is held by another writer for over {LOCK_TIMEOUT_S} s", where=where
        ) from None


def series_values(text: str) -> Mapping[tuple[str, Labels], float]:
    """{(name, sorted labels): value} of a textfile: what tests and tools compare."""
    return {(s.name, tuple(sorted(s.labels))): s.value for f in parse(text) for s in f.series}
