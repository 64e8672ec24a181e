"""The position-keeping YAML reader: typed access to the nodes PyYAML's ``compose`` gives
(mapping, list, text, integer, number, hostlist...), recording every problem at the node's
``file:line:col`` with a hint, so one pass collects all problems of a file."""

from __future__ import annotations

import math
from collections.abc import Iterable

import yaml

from slurm_supernode.errors import Problem
from slurm_supernode.hostlist import HostlistError, expand
from slurm_supernode.hostlist import size as hostlist_size
from slurm_supernode.site.finder import short_repr
from slurm_supernode.site.limits import MAX_DEVICES_PER_NODE, MAX_INT, MAX_SITE_NODES
from slurm_supernode.site.validate import Loc, SourceMap, slurm_value_problem

_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_STR = "tag:yaml.org,2002:str"
_KIND = {
    _INT: "an integer",
    _FLOAT: "a number",
    _BOOL: "a boolean",
    _NULL: "null",
    _STR: "a string",
}

# What a value that should have been a name was read as (``nics.hcas: 5``: an integer).
_NAME_KINDS = {
    _INT: "integer",
    _FLOAT: "number",
    _BOOL: "boolean",
    "tag:yaml.org,2002:timestamp": "date",
}

_DOC_HINT = "see docs/site-config.md"
# Hints for the builder's generic messages (shape, type, range): every problem carries one.
_DEFAULT_HINTS = (
    ("must be a mapping", "write it as KEY: {a: 1} or as an indented block of KEY: VALUE lines"),
    ("must be a list", "write it as [a, b] or as '- item' lines"),
    ("must be a string", "write text; quote it if YAML would read a number, list or null"),
    ("must not be empty", "give a value or remove the key"),
    ("must be an integer", "a whole number, e.g. 8"),
    ("must be a finite number", "a real number: .nan and .inf are not figures"),
    ("must be a number", "e.g. 450 or 2.5"),
    ("must be true or false", "write true or false"),
    ("is missing required key", "see the annotated example in docs/site-config.md"),
    ("keys must be plain names", "keys are plain words, not lists or mappings"),
    ("lists more than", "a site config describes real hardware: check for a generated list"),
    ("must be", "see docs/site-config.md for the allowed values"),
)


class NodeReader:
    """Typed access to YAML nodes that records every problem at its line:col (the section
    builders share one reader, so all problems of a file are collected in one pass)."""

    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []
        self.src = SourceMap(file)
        self._cons = yaml.constructor.SafeConstructor()
        self._spec_broken = False
        self.fatal = False  # a bound was exceeded: no site, only the problem
        self.suggested: set[tuple[int, str]] = set()  # (mapping, key) a typo was matched to
        self.hosts_total = 0  # hosts named so far, against MAX_SITE_NODES
        self.override_hosts = 0  # hosts named by node_overrides so far

    # -- primitives --------------------------------------------------------------------
    @staticmethod
    def loc(node: yaml.Node) -> Loc:
        return (node.start_mark.line + 1, node.start_mark.column + 1)

    def err(self, where: yaml.Node | Loc | None, message: str, hint: str | None = None) -> None:
        if isinstance(where, yaml.Node):
            line, col = self.loc(where)
        else:
            line, col = where or (1, 1)
        if hint is None:
            hint = next((h for frag, h in _DEFAULT_HINTS if frag in message), _DOC_HINT)
        self.problems.append(Problem(self.file, line, col, message, hint))

    def _kind(self, node: yaml.Node) -> str:
        if isinstance(node, yaml.MappingNode):
            return "a mapping"
        if isinstance(node, yaml.SequenceNode):
            return "a list"
        return _KIND.get(node.tag, "a value") + (f" {node.value!r}" if node.tag != _NULL else "")

    def mapping(
        self,
        node: yaml.Node,
        what: str,
        keys: Iterable[str] | None,
        required: Iterable[str] = (),
    ) -> dict[str, tuple[yaml.Node, yaml.Node]] | None:
        """key -> (key node, value node); reports unknown, duplicate and missing keys."""
        if not isinstance(node, yaml.MappingNode):
            self.err(node, f"{what} must be a mapping, got {self._kind(node)}")
            return None
        allowed = tuple(keys) if keys is not None else None
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for knode, vnode in node.value:
            if not isinstance(knode, yaml.ScalarNode):
                self.err(knode, f"{what}: keys must be plain names")
                continue
            key = knode.value
            if allowed is None and knode.tag != _STR:  # free keys are names (hosts, profiles)
                self._wrong_name(knode, f"{what} key", "a name")
                continue
            if allowed is not None and key not in allowed:
                import difflib  # only when a name is wrong

                close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
                hint = (
                    f"did you mean {close[0]!r}?" if close else "valid keys: " + ", ".join(allowed)
                )
                if close:  # the typo is the problem, not the key it misspells
                    self.suggested.add((id(node), close[0]))
                self.err(knode, f"unknown key {key!r} in {what}", hint)
                continue
            if key in out:
                self.err(knode, f"duplicate key {key!r} in {what}", "each key may appear once")
                continue
            out[key] = (knode, vnode)
        for key in required:
            if key not in out and (id(node), key) not in self.suggested:
                self.err(node, f"{what} is missing required key {key!r}")
        return out

    def seq(self, node: yaml.Node, what: str) -> list[yaml.Node] | None:
        if not isinstance(node, yaml.SequenceNode):
            self.err(node, f"{what} must be a list, got {self._kind(node)}")
            return None
        return list(node.value)

    def text(self, node: yaml.Node, what: str, allow_empty: bool = False) -> str | None:
        if not isinstance(node, yaml.ScalarNode) or node.tag == _NULL:
            self.err(node, f"{what} must be a string, got {self._kind(node)}")
            return None
        if not allow_empty and not node.value.strip():
            self.err(node, f"{what} must not be empty")
            return None
        return node.value

    def boolean(self, node: yaml.Node, what: str) -> bool | None:
        if not isinstance(node, yaml.ScalarNode) or node.tag != _BOOL:
            self.err(node, f"{what} must be true or false, got {self._kind(node)}")
            return None
        return node.value.lower() in ("true", "yes", "on")

    def integer(
        self,
        node: yaml.Node,
        what: str,
        minimum: int | None = None,
        maximum: int = MAX_INT,
        hint: str | None = None,
    ) -> int | None:
        if not isinstance(node, yaml.ScalarNode) or node.tag != _INT:
            self.err(node, f"{what} must be an integer, got {self._kind(node)}", hint)
            return None
        digits = node.value.lstrip("+-0").replace("_", "")
        value = self._cons.construct_yaml_int(node) if len(digits) <= 30 else None
        if value is None or value > maximum:
            shown = node.value if len(node.value) <= 30 else f"a {len(node.value)}-digit number"
            self.err(node, f"{what} must be <= {maximum}, got {shown}", hint)
            return None
        if minimum is not None and value < minimum:
            self.err(node, f"{what} must be >= {minimum}, got {value}", hint)
            return None
        return value

    def number(
        self,
        node: yaml.Node,
        what: str,
        *,
        minimum: float | None = None,
        above: float | None = None,
        hint: str | None = None,
    ) -> float | None:
        if not isinstance(node, yaml.ScalarNode) or node.tag not in (_INT, _FLOAT):
            self.err(node, f"{what} must be a number, got {self._kind(node)}", hint)
            return None
        try:
            value = float(node.value.replace("_", ""))
        except ValueError:
            value = self._cons.construct_yaml_float(node)
        if not math.isfinite(value):
            self.err(node, f"{what} must be a finite number, got {node.value}", hint)
            return None
        if minimum is not None and value < minimum:
            self.err(node, f"{what} must be >= {minimum:g}, got {value:g}", hint)
            return None
        if above is not None and value <= above:
            self.err(node, f"{what} must be > {above:g}, got {value:g}", hint)
            return None
        return value

    def slurm_value(
        self,
        node: yaml.Node,
        what: str,
        also: str = "",
        *,
        numbers: bool = False,
        noun: str = "a name",
    ) -> str | None:
        """A string that is exported into a Slurm config file as one value; a name unless
        ``numbers`` (NodeName attributes such as Weight=10 take numbers)."""
        value = self.text(node, what) if numbers else self.name(node, what, noun)
        if value is None:
            return None
        why = slurm_value_problem(value, also)
        if why:
            self.err(
                node,
                f"{what} {short_repr(value)} {why}",
                "it is written into Slurm's config as one word: letters, digits, '-', '_', '.'",
            )
            return None
        return value

    def hostlist(self, node: yaml.Node, what: str, site_hosts: bool = True) -> list[str] | None:
        """Expand a hostlist; ``site_hosts`` ones count against the site's bound of hosts."""
        expr = self.name(node, what, "a hostlist")
        if expr is None:
            return None
        try:
            n = hostlist_size(expr.strip())
            if not site_hosts:  # overrides name site hosts again: their own, larger budget
                self.override_hosts += n
                if self.override_hosts > 4 * MAX_SITE_NODES:
                    self.err(
                        node,
                        f"node_overrides name {self.override_hosts} hosts in all;"
                        f" at most {4 * MAX_SITE_NODES}",
                        "check the overrides' hostlists (and aliases of them) for a typo",
                    )
                    self.fatal = True
                    return None
            if (self.hosts_total if site_hosts else 0) + n > MAX_SITE_NODES:
                self.err(
                    node,
                    f"{what}: {n} hosts ({self.hosts_total + n} in the site so far);"
                    f" a site may have at most {MAX_SITE_NODES}",
                    "check the ranges for a typo (an extra digit)",
                )
                self.fatal = True
                return None
            if site_hosts:
                self.hosts_total += n
            return expand(expr.strip())
        except HostlistError as exc:
            self.err(
                node,
                f"bad hostlist {short_repr(expr)} in {what}: {exc}",
                "Slurm hostlist syntax, e.g. gb[001-018] or n[0-3],n7",
            )
            return None

    def name(self, node: yaml.Node, what: str, noun: str = "a name") -> str | None:
        """A name (host, device, interface, partition, feature, path, ...): YAML text only.

        A number, boolean, date or null at that position is refused there, never taken as
        a name ("5", "True"): it is almost always a slip, and quoting says it is meant.
        """
        if isinstance(node, yaml.ScalarNode) and node.tag == _STR:
            if not node.value.strip():
                self.err(node, f"{what} must not be empty")
                return None
            return node.value
        self._wrong_name(node, what, noun)
        return None

    def names(
        self, node: yaml.Node, what: str, noun: str = "a name", plural: str = "names"
    ) -> tuple[str, ...] | None:
        """A name or a list of names: ``a,b``, ``[a, b]`` or ``- a`` lines, each a name."""
        plural = f"{noun} or list of {plural}"
        if isinstance(node, yaml.ScalarNode):
            if node.tag != _STR:
                self._wrong_name(node, what, plural)
                return None
            out = tuple(x.strip() for x in node.value.split(",") if x.strip())
        elif isinstance(node, yaml.SequenceNode):
            out = None
        else:
            self._wrong_name(node, what, plural)
            return None
        n = len(out) if out is not None else len(node.value)
        if n > MAX_DEVICES_PER_NODE:
            self.err(node, f"{what} lists {n} items; at most {MAX_DEVICES_PER_NODE}")
            return None
        if out is not None:
            return out
        items = [self.name(item, f"{what}[{k}]", noun) for k, item in enumerate(node.value)]
        kept = tuple(t for t in items if t is not None)
        return kept if len(kept) == len(items) else None

    def _wrong_name(self, node: yaml.Node, what: str, noun: str) -> None:
        if isinstance(node, yaml.MappingNode):
            got, hint = "a mapping", f"give {noun}, not KEY: VALUE pairs (check the indentation)"
        elif isinstance(node, yaml.SequenceNode):
            got, hint = "a list", f"give {noun}, not a list"
        elif node.tag == _NULL:
            got, hint = "null", f"give {noun}; an empty value or ~ is null in YAML"
        else:
            kind = _NAME_KINDS.get(node.tag, "value")
            shown = short_repr(node.value)[1:-1]
            got = f"{kind} {shown}"
            article = "an" if kind[0] in "aeiou" else "a"
            hint = f'YAML reads {shown} as {article} {kind}: write "{shown}" if it is the name'
        self.err(node, f"{what}: expected {noun}, got {got}", hint)
