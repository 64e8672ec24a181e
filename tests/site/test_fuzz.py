"""Mutated bundled site files: the loader reports problems, never crashes, never hangs.

Hypothesis deletes, retypes and duplicates lines and values of the bundled configs and injects
characters and bytes. Whatever comes out, ``load_file`` must return (site, problems) or raise
only the project's own errors, within a second, and every problem must be one line located
inside the file.
"""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_supernode.errors import SnrunError
from slurm_supernode.site.loader import load_file

ROOT = Path(__file__).resolve().parent.parent.parent
BUNDLED = {p.stem: p.read_text() for p in sorted((ROOT / "site-configs").glob("*.yaml"))}
# Values an admin (or an attacker) might put anywhere.
VALUES = [
    "", "~", "null", "x", "-1", "0", "1.5", ".nan", "-.inf", "99999999999", "1" + "0" * 400,
    "[]", "{}", "[1, [2]]", "{a: {b: c}}", "yes", "'a\\nb'", '"a\\nNodeName=evil CPUs=1"',
    "n[0-99999999]", "a[0-9999]b[0-9999]", "n[01-100]", "n[3-1]", "@all", "n[0-3]&n1",
    "!!python/object/apply:os.system ['id']", "!custom x", "&a 1", "*a", "*undefined",
    "'{name} x'", "'10.{node+999}.0.{dev}'", "[[0, 1], [1, 2]]", "é", "'#'", "a=b", "|\n  x",
]  # fmt: skip
CHARS = ["\x00", "\x07", "\x1b", "\x7f", "\x85", "\t", "\r", "\n", ":", "-", "[", "{", "'",
         '"', "#", "&", "*", "!", "%", "@", "`", "|", ">", "\ufeff", "é", "\U0001f600"]  # fmt: skip
BYTES = [b"\xff", b"\xfe", b"\x80", b"\xc3", b"\xed\xa0\x80", b"\x00"]


@st.composite
def mutated(draw) -> tuple[str, bytes]:
    name = draw(st.sampled_from(sorted(BUNDLED)))
    lines = BUNDLED[name].splitlines()
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["delete", "retype", "duplicate", "inject", "truncate", "key"]))
        line = lines[i]
        if op == "delete":
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, line)
        elif op == "retype" and ":" in line:
            key = line.split(":", 1)[0]
            lines[i] = f"{key}: {draw(st.sampled_from(VALUES))}"
        elif op == "inject":
            pos = draw(st.integers(0, len(line)))
            ch = draw(st.sampled_from(CHARS) | st.characters())
            lines[i] = line[:pos] + ch + line[pos:]
        elif op == "truncate":
            lines = lines[:i]
        elif op == "key" and ":" in line:
            indent = line[: len(line) - len(line.lstrip())]
            lines.insert(i, f"{indent}{draw(st.sampled_from(['nodes', 'name', 'x', '1']))}: 1")
    text = "\n".join(lines) + "\n"
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.booleans()) and draw(st.integers(0, 9)) == 0:
        pos = draw(st.integers(0, len(data)))
        data = data[:pos] + draw(st.sampled_from(BYTES)) + data[pos:]
    return name, data


def _check(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_bytes(data)
    start = time.process_time()  # CPU time: other jobs on a loaded machine do not count
    try:
        site, problems = load_file(path)
    except SnrunError:
        return
    elapsed = time.process_time() - start
    assert elapsed < 1.0, f"took {elapsed:.2f} s of CPU"
    assert site is not None or problems
    n_lines = data.count(b"\n") + 2
    for p in problems:
        text = str(p)
        assert "\n" not in text and "\r" not in text, text
        assert text.startswith(f"{path}:{p.line}:{p.col}: "), text
        assert 1 <= p.line <= n_lines and p.col >= 1, text
        assert p.hint, text
        assert "<unicode string>" not in text and "padding length" not in text, text
    locs = [(p.line, p.col) for p in problems]
    assert locs == sorted(locs)


@settings(
    max_examples=100,
    deadline=None,  # the time bound is asserted inside, per load, generously
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=mutated())
def test_mutated_bundled_sites(tmp_path, case):
    _, data = case
    _check(tmp_path, data)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.binary(max_size=400) | st.text(max_size=400).map(lambda t: t.encode("utf-8")))
def test_arbitrary_bytes(tmp_path, data):
    _check(tmp_path, data)
