"""Guards that run before the site builder sees a value: bytes that are not UTF-8, characters
YAML refuses, explicit tags (a site is plain data) and aliases that expand past
``MAX_YAML_VALUES`` ("billion laughs"). Each problem is reported at its line:col."""

from __future__ import annotations

import re

import yaml

from slurm_supernode.errors import Problem
from slurm_supernode.site.finder import short_repr
from slurm_supernode.site.limits import MAX_YAML_VALUES

YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Tags the safe resolver gives plain YAML; anything else (!!python/..., !custom) is refused.
_PLAIN_TAGS = {
    f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "seq", "map")
} | {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:merge"}
# What YAML accepts as text (PyYAML's reader): no other control characters, no surrogates.
_NON_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


def byte_problem(file: str, data: bytes, pos: int) -> Problem:
    """The first byte that is not UTF-8, at its line and column (in characters)."""
    start = data.rfind(b"\n", 0, pos) + 1
    line = data.count(b"\n", 0, pos) + 1
    col = len(data[start:pos].decode("utf-8", "replace")) + 1
    return Problem(
        file, line, col, f"byte 0x{data[pos]:02x} is not UTF-8 text", "save the file as UTF-8"
    )


def text_problems(text: str, file: str) -> list[Problem]:
    """Characters YAML refuses (control characters, surrogates), each at its line:col."""
    out: list[Problem] = []
    for m in _NON_PRINTABLE.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        line = text.count("\n", 0, m.start()) + 1
        ch = m.group()
        out.append(
            Problem(
                file,
                line,
                m.start() - start + 1,
                f"control character U+{ord(ch):04X} is not allowed in YAML",
                "delete it; in a double-quoted string write an escape such as \\t",
            )
        )
        if len(out) >= 20:
            break
    return out


def alias_blowup(root: yaml.Node, file: str) -> Problem | None:
    """The first collection that aliases expand past MAX_YAML_VALUES values, or None.

    Sizes are computed once per node (aliases share nodes), so this is linear in the file.
    """
    size: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in size:
            continue
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            size[id(node)] = 1
            continue
        if not done:
            stack.append((node, True))
            stack.extend((c, False) for c in children if id(c) not in size)
            continue
        total = 1 + sum(size[id(c)] for c in children)
        if total > MAX_YAML_VALUES:
            return Problem(
                file,
                node.start_mark.line + 1,
                node.start_mark.column + 1,
                f"this value expands to more than {MAX_YAML_VALUES} YAML values through aliases",
                "use fewer aliases of large anchors (*name)",
            )
        size[id(node)] = total
    return None


def tag_problems(root: yaml.Node, file: str) -> list[Problem]:
    """Explicit YAML tags (!!python/object, !custom) at their positions: a site is plain data."""
    out: list[Problem] = []
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:  # aliases share nodes: each is checked once
            continue
        seen.add(id(node))
        if node.tag not in _PLAIN_TAGS:
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            out.append(
                Problem(
                    file,
                    node.start_mark.line + 1,
                    node.start_mark.column + 1,
                    f"YAML tag {short_repr(tag)} is not allowed",
                    "site configs are plain YAML: remove the tag",
                )
            )
        if isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
        elif isinstance(node, yaml.MappingNode):
            for k, v in reversed(node.value):
                stack += [v, k]
    return sorted(out, key=lambda p: (p.line, p.col))
