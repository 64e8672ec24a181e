"""Load a site config (YAML) into the ``Site`` model, keeping ``file:line:col`` for every value.

PyYAML's ``compose`` gives a node tree whose nodes carry their start position; one pass over
it checks the shape and types of every key, builds the dataclasses and collects *all* problems
(unknown keys with the closest valid key, wrong types, missing keys, bad hostlists, ...). The
cross-object rules then run in ``validate.py`` on the built model. ``load_site`` raises one
``ConfigError`` listing every problem. Hostlists are expanded once per super node (ClusterShell),
node specs are merged once per distinct layer combination, so a 100k-device site loads fast.

Sites are found by path or by name (``find_site``): an existing path, ``$SNRUN_SITE``,
``/etc/snrun/sites/NAME.yaml``, then the configs bundled with the package.
"""

from __future__ import annotations

import difflib
import errno
import math
import os
import re
import stat
import string
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from slurm_supernode.errors import ConfigError, InputError, Problem
from slurm_supernode.hostlist import HostlistError, expand
from slurm_supernode.hostlist import size as hostlist_size
from slurm_supernode.jobenv import SITE_ENV, SnrunSettings
from slurm_supernode.site.model import (
    CROSS_ISLAND,
    LINK_LEVELS,
    RESTART_CAUSES,
    STRATEGIES,
    VENDORS,
    BenchSettings,
    DoctorSettings,
    EnvProfile,
    LinkLevel,
    NicSpec,
    Node,
    NodeSpec,
    PathSettings,
    Site,
    SlurmSettings,
    SuperNode,
)
from slurm_supernode.site.validate import (
    Loc,
    SourceMap,
    check_device_groups,
    slurm_value_problem,
    validate_site,
)

SYSTEM_SITES_DIR = Path("/etc/snrun/sites")

TOP_KEYS = (
    "name",
    "description",
    "vendor",
    "supernodes",
    "node_defaults",
    "node_overrides",
    "links",
    "device_ips",
    "host_ip",
    "slurm",
    "env_profiles",
    "bench",
    "paths",
    "doctor",
    "imex_channels",
    "restarts",
)
SPEC_KEYS = ("devices", "device_groups", "nics", "gres_type", "gres_file", "cpus", "memory_mb")
SN_KEYS = (
    "name",
    "nodes",
    "racks",
    "super_pod_id",
    "spares",
    "feature",
    "node_defaults",
    "device_ips",
    "host_ip",
)
SLURM_KEYS = (
    "partition",
    "feature_format",
    "strategy",
    "spine_switch",
    "supernode_partitions",
    "gres_name",
    "node_options",
)
LINK_KEYS = ("bandwidth_GBps", "latency_us", "kind")
# Renamed: the value was always GB/s (gigabytes per second) while the name said gigabits.
OLD_LINK_KEYS = {"bandwidth_gbps": "bandwidth_GBps"}
BENCH_KEYS = ("regression_pct", "baseline_runs", "sizes", "min_busbw_gbps")
PATH_KEYS = ("jobs_dir", "results_db", "state_dir")
DOCTOR_NUMBERS = ("bandwidth_warn", "bandwidth_fail", "slow_pct", "min_tflops", "min_write_mbps",
                  "min_read_mbps", "min_free_gb")  # fmt: skip
DOCTOR_KEYS = (*DOCTOR_NUMBERS, "size", "checkpoint_dir", "storage_mb")
IP_KEYS = ("pattern", "nodes")
# NodeName attributes snrun writes itself (from node_defaults / super nodes).
RESERVED_NODE_OPTIONS = ("NodeName", "Features", "Gres", "CPUs", "RealMemory", "Port")
# Fields of device/host IP patterns; each may carry "+N" ({node+1}).
IP_FIELDS = ("sn", "pod", "node", "gnode", "dev", "slot")

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
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Tags the safe resolver gives plain YAML; anything else (!!python/..., !custom) is refused.
_PLAIN_TAGS = {
    f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "seq", "map")
} | {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:merge"}
# What YAML accepts as text (PyYAML's reader): no other control characters, no surrogates.
_NON_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)

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

# Bounds: far above any real site, low enough that loading a typo (n[0-9999999]) or a hostile
# file answers at once with the number instead of allocating gigabytes.
MAX_FILE_BYTES = 64 << 20
MAX_YAML_VALUES = 1_000_000  # after aliases are expanded ("billion laughs")
MAX_SITE_NODES = 250_000
MAX_SITE_DEVICES = 1_000_000
MAX_DEVICES_PER_NODE = 1024
MAX_CPUS = 65_535  # slurm.conf CPUs= is 16 bits
MAX_MEMORY_MB = 1 << 40
MAX_INT = (1 << 31) - 1


# -- finding sites --------------------------------------------------------------------------
def bundled_sites_dir() -> Path | None:
    from slurm_supernode.resources import site_configs_dir

    try:
        return site_configs_dir()
    except FileNotFoundError:
        return None


def available_sites() -> dict[str, Path]:
    """Site name -> file, system sites shadowing bundled ones of the same name."""
    found: dict[str, Path] = {}
    for folder in (bundled_sites_dir(), SYSTEM_SITES_DIR):
        if folder and folder.is_dir():
            for path in sorted(folder.glob("*.yaml")):
                found[path.stem] = path
    return dict(sorted(found.items()))


def find_site(name_or_path: str | os.PathLike | None) -> Path:
    """The config file of a site given by path or name (see the module docstring)."""
    arg = name_or_path
    if arg is None:
        arg = SnrunSettings.from_environ().site
        if arg is None:
            raise InputError(
                "no site given",
                hint=f"pass --site NAME or FILE, or set ${SITE_ENV}; sites: "
                + (", ".join(available_sites()) or "none installed"),
            )
    name = os.fspath(arg)
    path = Path(name).expanduser()
    why = path_problem(path)
    if why is None:
        return path
    looks_like_path = "/" in name or name.endswith((".yaml", ".yml")) or why != "no such file"
    if looks_like_path:
        raise InputError(why, where=shown_path(name), hint=_PATH_HINTS.get(why, _SITE_HINT))
    for folder in (SYSTEM_SITES_DIR, bundled_sites_dir()):
        if folder is not None:
            candidate = folder / f"{name}.yaml"
            if path_problem(candidate) is None:
                return candidate
    names = list(available_sites())
    close = difflib.get_close_matches(name, names, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise InputError(
        f"unknown site {name!r}",
        hint=hint + "available sites: " + (", ".join(names) or "none") + "; or give a file path",
    )


_SITE_HINT = "give a site name (snrun site list) or the path of a site YAML file"
_PATH_HINTS = {
    "no such file": _SITE_HINT,
    "is a directory": "give the YAML file inside it",
    "file name is too long": "each path component may have at most 255 bytes",
}


def shown_path(text: str, limit: int = 80) -> str:
    """A path for a one-line message: control characters escaped, absurd lengths shortened."""
    shown = text.encode("unicode_escape", "backslashreplace").decode("ascii")
    return shown if len(shown) <= limit else shown[: limit // 2] + "..." + shown[-limit // 4 :]


def short_repr(value: str, limit: int = 60) -> str:
    """repr() of a value for a one-line message, shortened in the middle when absurdly long."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit // 2] + "..." + text[-limit // 4 :]


def path_problem(path: Path) -> str | None:
    """Why ``path`` is not a readable regular file, in words (None: it is one).

    Never opens the path: a FIFO would block the reader, so only ``stat`` is used.
    """
    try:
        st = os.stat(path)
    except ValueError:
        return "the path contains a NUL byte"
    except OSError as exc:
        return _os_problem(path, exc)
    if stat.S_ISDIR(st.st_mode):
        return "is a directory"
    if stat.S_ISFIFO(st.st_mode):
        return "is a FIFO (named pipe), not a regular file"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file (a device or socket)"
    if not os.access(path, os.R_OK):
        return "is not readable (permission denied)"
    return None


def _os_problem(path: Path, exc: OSError) -> str:
    code = exc.errno
    if code == errno.ENAMETOOLONG:
        return "file name is too long"
    if code == errno.ELOOP:
        return "is a loop of symbolic links"
    if code in (errno.EACCES, errno.EPERM):
        return "cannot be reached (permission denied on a directory above it)"
    if code == errno.ENOTDIR:
        for parent in reversed(path.parents):
            if parent.exists() and not parent.is_dir():
                kind = "a file" if parent.is_file() else "not a directory"
                return f"{shown_path(str(parent))} is {kind}" + (
                    ", not a directory" * parent.is_file()
                )
        return "a part of the path is not a directory"
    if code == errno.ENOENT:
        if os.path.islink(path):
            target = shown_path(os.readlink(path))
            return f"is a broken symbolic link (to {target}, which is missing)"
        return "no such file"
    return (exc.strerror or "cannot be read").lower()


def load_site(name_or_path: str | os.PathLike | None) -> Site:
    """Find, load and validate a site; ConfigError with every problem if it is not valid."""
    path = find_site(name_or_path)
    site, problems = load_file(path)
    if problems or site is None:
        raise ConfigError(problems)
    return site


def load_file(path: str | os.PathLike) -> tuple[Site | None, list[Problem]]:
    """Parse and validate one file; returns the site (None if unusable) and all problems."""
    p = Path(path)
    why = path_problem(p)
    if why is None and p.stat().st_size > MAX_FILE_BYTES:
        why = f"is {p.stat().st_size} bytes; a site config may have at most {MAX_FILE_BYTES}"
    if why is None:
        try:
            data = p.read_bytes()
        except OSError as exc:
            why = _os_problem(p, exc)
    if why is not None:
        it = "it " if why.startswith("is ") else ""
        hint = _PATH_HINTS.get(why, "check the path")
        return None, [Problem(str(path), 1, 1, f"cannot read the site config: {it}{why}", hint)]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [_byte_problem(str(path), data, exc.start)]
    return parse_site(text, str(path))


def _byte_problem(file: str, data: bytes, pos: int) -> Problem:
    """The first byte that is not UTF-8, at its line and column (in characters)."""
    start = data.rfind(b"\n", 0, pos) + 1
    line = data.count(b"\n", 0, pos) + 1
    col = len(data[start:pos].decode("utf-8", "replace")) + 1
    return Problem(
        file, line, col, f"byte 0x{data[pos]:02x} is not UTF-8 text", "save the file as UTF-8"
    )


def _text_problems(text: str, file: str) -> list[Problem]:
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


def _alias_blowup(root: yaml.Node, file: str) -> Problem | None:
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


def _tag_problems(root: yaml.Node, file: str) -> list[Problem]:
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


def parse_site(text: str, file: str = "<string>") -> tuple[Site | None, list[Problem]]:
    """Parse and validate config text; ``file`` is used in problem locations."""
    bad_text = _text_problems(text, file)
    if bad_text:
        return None, bad_text
    try:
        root = yaml.compose(text, Loader=_Loader)
    except RecursionError:
        return None, [Problem(file, 1, 1, "YAML nesting is too deep", "a site config is flat")]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        what = " ".join(x for x in (exc.context, exc.problem) if x)
        ctx = exc.context_mark
        if ctx is not None and mark is not None and ctx.line != mark.line:
            what += f" (it started at {ctx.line + 1}:{ctx.column + 1})"
        return None, [
            Problem(file, line, col, f"YAML syntax error: {what}", "check indentation and quoting")
        ]
    except yaml.YAMLError:
        return None, [Problem(file, 1, 1, "YAML error", "check the file is YAML")]
    if root is not None and "!" in text:  # tags are only written with '!'
        tags = _tag_problems(root, file)
        if tags:
            return None, tags
    if root is not None and "*" in text:  # aliases are only written with '*'
        blowup = _alias_blowup(root, file)
        if blowup:
            return None, [blowup]
    builder = _Builder(file)
    site = builder.build(root)
    problems = builder.problems
    if site is not None:
        problems += validate_site(site, builder.src)
    problems = sorted(_dedupe(problems), key=lambda p: (p.line, p.col))
    return (None if builder.fatal else site), problems


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple] = set()
    out = []
    for p in problems:
        key = (p.line, p.col, p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


# -- the builder ----------------------------------------------------------------------------
@dataclass
class _Val:
    """A parsed spec value with where it came from and how specific its layer is."""

    value: Any
    loc: Loc
    rank: int


class _Builder:
    """One pass over the composed YAML: checks shape and types, builds the model."""

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
            if allowed is not None and key not in allowed:
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

    def slurm_value(self, node: yaml.Node, what: str, also: str = "") -> str | None:
        """A string that is exported into a Slurm config file as one value."""
        value = self.text(node, what)
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
        expr = self.text(node, what)
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

    def str_list(self, node: yaml.Node, what: str) -> tuple[str, ...] | None:
        if isinstance(node, yaml.ScalarNode) and node.tag != _NULL:
            out = tuple(x.strip() for x in node.value.split(",") if x.strip())
        else:
            items = self.seq(node, what)
            if items is None:
                return None
            out = None
        n = len(out) if out is not None else len(items)
        if n > MAX_DEVICES_PER_NODE:
            self.err(node, f"{what} lists {n} items; at most {MAX_DEVICES_PER_NODE}")
            return None
        if out is not None:
            return out
        out = [self.text(item, f"{what} item") for item in items]
        return None if None in out else tuple(out)  # type: ignore[arg-type]

    # -- the whole file ----------------------------------------------------------------
    def build(self, root: yaml.Node | None) -> Site | None:
        if root is None:
            self.err((1, 1), "the file is empty", "see docs/site-config.md for the schema")
            return None
        top = self.mapping(root, "the site config", TOP_KEYS, ("name", "vendor", "supernodes"))
        if top is None:
            return None
        self.src.root = self.loc(root)
        name = self.text(top["name"][1], "name") if "name" in top else None
        vendor = self._vendor(top.get("vendor"))
        slurm = self._slurm(top["slurm"][1]) if "slurm" in top else SlurmSettings()
        defaults = (
            self._spec_layer(top["node_defaults"][1], "node_defaults", 0)
            if ("node_defaults" in top)
            else {}
        )
        links = self._links(top.get("links"), root)
        supernodes = self._supernodes(top, defaults, slurm, vendor)
        env = self._env_profiles(top["env_profiles"][1]) if "env_profiles" in top else {}
        bench = self._bench(top["bench"][1]) if "bench" in top else BenchSettings()
        paths = self._paths(top["paths"][1]) if "paths" in top else PathSettings()
        doctor = self._doctor(top["doctor"][1]) if "doctor" in top else DoctorSettings()
        imex = (
            self.boolean(top["imex_channels"][1], "imex_channels")
            if "imex_channels" in top
            else False
        )
        restarts = self._restarts(top["restarts"][1]) if "restarts" in top else ()
        if supernodes is None:
            return None
        return Site(
            name=name or "?",
            vendor=vendor or "?",
            supernodes=tuple(supernodes),
            links=links,
            slurm=slurm,
            env_profiles=env,
            bench=bench,
            paths=paths,
            doctor=doctor,
            imex_channels=bool(imex),
            restarts=restarts,
            source=self.file,
        )

    def _vendor(self, item: tuple[yaml.Node, yaml.Node] | None) -> str | None:
        if item is None:
            return None
        vendor = self.text(item[1], "vendor")
        if vendor is not None and vendor not in VENDORS:
            self.err(item[1], f"unknown vendor {vendor!r}", "choose one of " + ", ".join(VENDORS))
            return None
        return vendor

    # -- slurm ---------------------------------------------------------------------------
    def _slurm(self, node: yaml.Node) -> SlurmSettings:
        m = self.mapping(node, "slurm", SLURM_KEYS)
        if not m:
            return SlurmSettings()
        kw: dict[str, Any] = {}
        for key in ("partition", "spine_switch", "gres_name"):
            if key in m:
                value = self.slurm_value(m[key][1], f"slurm.{key}", ",:")
                if value is not None:
                    kw[key] = value
        for key in m:
            self.src.slurm[key] = self.loc(m[key][1])
        if "strategy" in m:
            strategy = self.text(m["strategy"][1], "slurm.strategy")
            if strategy is not None and strategy not in STRATEGIES:
                self.err(
                    m["strategy"][1],
                    f"unknown strategy {strategy!r}",
                    "choose one of " + ", ".join(STRATEGIES),
                )
            elif strategy is not None:
                kw["strategy"] = strategy
        if "feature_format" in m:
            fmt = self.text(m["feature_format"][1], "slurm.feature_format")
            if fmt is not None and self._check_format(m["feature_format"][1], fmt, ("name",)):
                kw["feature_format"] = fmt
        if "supernode_partitions" in m:
            parts = self.str_list(m["supernode_partitions"][1], "slurm.supernode_partitions")
            for part in parts or ():
                why = slurm_value_problem(part, ",:")
                if why:
                    self.err(
                        m["supernode_partitions"][1],
                        f"slurm.supernode_partitions item {short_repr(part)} {why}",
                        "partition names are single words",
                    )
                    parts = None
                    break
            if parts is not None:
                kw["supernode_partitions"] = parts
        if "node_options" in m:
            opts = self.mapping(m["node_options"][1], "slurm.node_options", None)
            pairs = []
            for key, (knode, vnode) in (opts or {}).items():
                if key in RESERVED_NODE_OPTIONS:
                    self.err(
                        knode,
                        f"slurm.node_options may not set {key}",
                        "snrun writes it from node_defaults / super nodes / --node-port-base",
                    )
                    continue
                if not (key.isascii() and key.isalnum()):
                    self.err(
                        knode,
                        f"bad NodeName attribute {short_repr(key)}",
                        "e.g. NodeAddr, Weight",
                    )
                    continue
                value = self.slurm_value(vnode, f"slurm.node_options.{key}")
                if value is not None:
                    pairs.append((key, value))
            kw["node_options"] = tuple(pairs)
        return SlurmSettings(**kw)

    def _check_format(self, node: yaml.Node, fmt: str, fields: tuple[str, ...]) -> bool:
        try:
            names = [f for _, f, _, _ in string.Formatter().parse(fmt) if f is not None]
        except ValueError as exc:
            self.err(node, f"bad format {fmt!r}: {exc}", "use {name}; write {{ for a brace")
            return False
        for f in names:
            if f not in fields:
                self.err(
                    node,
                    f"unknown field {{{f}}} in {fmt!r}",
                    "fields: " + ", ".join("{" + x + "}" for x in fields),
                )
                return False
        return True

    # -- node specs --------------------------------------------------------------------
    def _spec_layer(
        self, node: yaml.Node, what: str, rank: int, extra: tuple[str, ...] = ()
    ) -> dict[str, _Val]:
        before = len(self.problems)
        m = self.mapping(node, what, SPEC_KEYS + extra, extra)
        layer: dict[str, _Val] = {}
        for key, (_, vnode) in (m or {}).items():
            if key in extra:
                continue
            label = f"{what}.{key}"
            value: Any = None
            if key == "devices":
                value = self.integer(vnode, label, 1, MAX_DEVICES_PER_NODE, "GPUs/NPUs per node")
            elif key == "cpus":
                value = self.integer(vnode, label, 1, MAX_CPUS, "slurm.conf CPUs=")
            elif key == "memory_mb":
                value = self.integer(vnode, label, 1, MAX_MEMORY_MB, "slurm.conf RealMemory=, MB")
            elif key == "gres_type":  # Gres=gpu:TYPE:N and gres.conf Type=
                value = self.slurm_value(vnode, label, ",:")
            elif key == "gres_file":  # gres.conf File=/dev/nvidia[0-7]
                value = self.slurm_value(vnode, label)
            elif key == "device_groups":
                value = self._device_groups(vnode, label)
            elif key == "nics":
                value = self._nics(vnode, label)
            if value is not None:
                layer[key] = _Val(value, self.loc(vnode), rank)
        if len(self.problems) > before:
            self._spec_broken = True
        return layer

    def _device_groups(self, node: yaml.Node, what: str) -> tuple[tuple[int, ...], ...] | None:
        groups = self.seq(node, what)
        if groups is None:
            return None
        out = []
        if len(groups) > MAX_DEVICES_PER_NODE or any(
            isinstance(g, yaml.SequenceNode) and len(g.value) > MAX_DEVICES_PER_NODE for g in groups
        ):
            self.err(node, f"{what} lists more than {MAX_DEVICES_PER_NODE} groups or devices")
            return None
        for g in groups:
            items = self.seq(g, f"{what} item")
            if items is None:
                return None
            ids = [self.integer(i, f"{what} device id", 0, MAX_DEVICES_PER_NODE) for i in items]
            if None in ids:
                return None
            out.append(tuple(ids))
        if not out:
            self.err(node, f"{what} is empty", "e.g. [[0,1,2,3],[4,5,6,7]]")
            return None
        return tuple(out)  # type: ignore[arg-type]

    def _nics(self, node: yaml.Node, what: str) -> NicSpec | None:
        m = self.mapping(node, what, ("socket_ifname", "hcas"))
        if m is None:
            return None
        ifname = (
            self.text(m["socket_ifname"][1], f"{what}.socket_ifname")
            if ("socket_ifname" in m)
            else None
        )
        hcas = self.str_list(m["hcas"][1], f"{what}.hcas") if "hcas" in m else ()
        if hcas and len(set(hcas)) != len(hcas):
            dup = next(h for h in hcas if hcas.count(h) > 1)
            self.err(m["hcas"][1], f"{what}.hcas lists {dup!r} twice", "list each HCA once")
        return NicSpec(socket_ifname=ifname, hcas=hcas or ())

    # -- super nodes -------------------------------------------------------------------
    def _supernodes(
        self, top: dict, defaults: dict[str, _Val], slurm: SlurmSettings, vendor: str | None
    ) -> list[SuperNode] | None:
        if "supernodes" not in top:
            return None
        snode = top["supernodes"][1]
        items = self.seq(snode, "supernodes")
        if items is None:
            return None
        if not items:
            self.err(snode, "supernodes is empty", "list at least one super node")
            return None
        raw: list[dict[str, Any]] = []
        for i, item in enumerate(items):
            raw.append(self._supernode(item, i))
        all_hosts = {h for r in raw for h, *_ in r["hosts"]}
        # node_overrides: hostname -> indices of the overrides that apply, in file order
        overrides: list[dict[str, _Val]] = []
        applies: dict[str, list[int]] = {}
        if "node_overrides" in top:
            for k, onode in enumerate(self.seq(top["node_overrides"][1], "node_overrides") or []):
                if self.fatal:  # a bound was exceeded: the rest would only repeat it
                    break
                layer = self._spec_layer(onode, f"node_overrides[{k}]", 2 + k, ("nodes",))
                overrides.append(layer)
                if not isinstance(onode, yaml.MappingNode):
                    continue
                nodes_node = next((v for kn, v in onode.value if kn.value == "nodes"), None)
                hosts = (
                    self.hostlist(nodes_node, f"node_overrides[{k}].nodes", site_hosts=False)
                    if (nodes_node is not None)
                    else None
                )
                for host in self._known(hosts or [], all_hosts, nodes_node):
                    applies.setdefault(host, []).append(k)
        ips = _IpSource.parse(self, top.get("device_ips"), "device_ips", devices=True)
        hips = _IpSource.parse(self, top.get("host_ip"), "host_ip", devices=False)
        for src in (ips, hips):
            if src:
                self._known(list(src.explicit), all_hosts, src.node)
        spec_cache: dict[tuple, NodeSpec] = {}

        def spec_of(i: int, r: dict[str, Any], over: tuple[int, ...]) -> NodeSpec:
            """Merged spec of a host with these overrides; built once per layer combination."""
            key = (i if r["layer"] else -1, over)
            spec = spec_cache.get(key)
            if spec is None:
                layers = [defaults, r["layer"], *(overrides[k] for k in over)]
                spec = self._merge_spec(layers, r["name_loc"], r["name"])
                spec_cache[key] = spec
            return spec

        # The device bound is checked before any node is built: a typo fails at once.
        devices_total = 0
        for i, r in enumerate(raw):
            hosts = r["hosts"]
            special = [applies[h] for h, *_ in hosts if h in applies] if applies else []
            if len(hosts) > len(special):
                devices_total += (len(hosts) - len(special)) * spec_of(i, r, ()).devices
            devices_total += sum(spec_of(i, r, tuple(ks)).devices for ks in special)
            if devices_total > MAX_SITE_DEVICES:
                self.err(
                    r["name_loc"],
                    f"the site has {devices_total} devices by super node {r['name']!r};"
                    f" a site may have at most {MAX_SITE_DEVICES}",
                    "check devices per node and the hostlists for a typo",
                )
                self.fatal = True
                return None
        out: list[SuperNode] = []
        gnode = 0
        for i, r in enumerate(raw):
            nodes: list[Node] = []
            ip_sources = (r["device_ips"], ips)
            hip_sources = (r["host_ip"], hips)
            with_ips = any(ip_sources) or any(hip_sources)
            name = r["name"]
            plain: NodeSpec | None = None  # the spec of hosts no override names (most of them)
            for idx, (host, rack, slot, _loc) in enumerate(r["hosts"]):
                if host in applies:
                    spec = spec_of(i, r, tuple(applies[host]))
                else:
                    spec = plain = plain or spec_of(i, r, ())
                dev_ips: tuple[str, ...] | None = None
                host_ip: tuple[str, ...] | None = None
                if with_ips:
                    fields = {
                        "sn": i,
                        "pod": r["pod"] if r["pod"] is not None else i,
                        "node": idx,
                        "gnode": gnode,
                        "slot": slot if slot is not None else idx,
                    }
                    dev_ips = self._render_ips(ip_sources, host, fields, spec.devices)
                    host_ip = self._render_ips(hip_sources, host, fields, 0)
                nodes.append(
                    Node(
                        host,
                        name,
                        idx,
                        spec,
                        rack,
                        slot,
                        dev_ips or (),
                        host_ip[0] if host_ip else None,
                    )
                )
                gnode += 1
            feature = r["feature"]
            if feature is None:
                feature = slurm.feature_format.format(name=r["name"])
            out.append(SuperNode(r["name"], tuple(nodes), feature, r["pod"], r["spares"]))
            self.src.node_src[i] = [h[3] for h in r["hosts"]]
        if vendor == "nvidia" and (ips or any(r["device_ips"] for r in raw)):
            self.err(
                top["device_ips"][1] if "device_ips" in top else None,
                "device_ips are only used with vendor: ascend",
                "remove them or set vendor: ascend",
            )
        self._ips_complete(out)
        return out

    def _supernode(self, item: yaml.Node, i: int) -> dict[str, Any]:
        r: dict[str, Any] = {
            "name": f"#{i}",
            "name_loc": self.loc(item),
            "hosts": [],
            "layer": {},
            "pod": None,
            "spares": 0,
            "feature": None,
            "device_ips": None,
            "host_ip": None,
        }
        what = f"supernodes[{i}]"
        m = self.mapping(item, what, SN_KEYS, ("name",))
        if m is None:  # reported: no follow-up problems about its name or nodes
            self.src.sn_broken.add(i)
            self.src.sn_unnamed.add(i)
            return r
        if "name" in m:
            name = self.text(m["name"][1], f"{what}.name")
            if name is not None:
                r["name"] = name
                what = f"super node {name!r}"
            else:
                self.src.sn_unnamed.add(i)
            r["name_loc"] = self.loc(m["name"][1])
        else:
            self.src.sn_unnamed.add(i)
        self.src.sn_name[i] = r["name_loc"]
        if "nodes" in m and "racks" in m:
            self.err(m["racks"][0], f"{what} has both nodes and racks", "use one of them")
            self.src.sn_broken.add(i)
        elif "nodes" in m:
            vnode = m["nodes"][1]
            self.src.sn_nodes[i] = self.loc(vnode)
            hosts = self.hostlist(vnode, f"{what} nodes")
            if hosts is None:
                self.src.sn_broken.add(i)
            loc = self.loc(vnode)
            r["hosts"] = [(h, None, None, loc) for h in hosts or ()]
        elif "racks" in m:
            self.src.sn_nodes[i] = self.loc(m["racks"][1])
            racks = self.seq(m["racks"][1], f"{what} racks")
            if racks is None:
                self.src.sn_broken.add(i)
            for k, rack in enumerate(racks or []):
                rm = self.mapping(rack, f"{what} racks[{k}]", ("name", "nodes"), ("name", "nodes"))
                if not rm or "name" not in rm or "nodes" not in rm:
                    self.src.sn_broken.add(i)
                    continue
                rname = self.text(rm["name"][1], "rack name")
                hosts = self.hostlist(rm["nodes"][1], f"{what} rack {rname!r} nodes")
                if hosts is None:
                    self.src.sn_broken.add(i)
                loc = self.loc(rm["nodes"][1])
                r["hosts"] += [(h, rname, s, loc) for s, h in enumerate(hosts or ())]
        else:
            if not {(id(item), "nodes"), (id(item), "racks")} & self.suggested:
                self.err(
                    item,
                    f"{what} is missing required key 'nodes' (or 'racks')",
                    "e.g. nodes: gb[001-018]",
                )
            self.src.sn_broken.add(i)
        if "super_pod_id" in m:
            r["pod"] = self.integer(m["super_pod_id"][1], f"{what}.super_pod_id", 0)
            self.src.sn_pod[i] = self.loc(m["super_pod_id"][1])
        if "spares" in m:
            spares = self.integer(m["spares"][1], f"{what}.spares", 0)
            if spares is not None and r["hosts"] and spares >= len(r["hosts"]):
                self.err(
                    m["spares"][1],
                    f"{what}.spares must be less than its {len(r['hosts'])} nodes, got {spares}",
                    "spares are nodes held in reserve inside the super node",
                )
            elif spares is not None:
                r["spares"] = spares
        if "feature" in m:
            r["feature"] = self.text(m["feature"][1], f"{what}.feature")
            self.src.sn_feature[i] = self.loc(m["feature"][1])
        if "node_defaults" in m:
            r["layer"] = self._spec_layer(m["node_defaults"][1], f"{what}.node_defaults", 1)
        r["device_ips"] = _IpSource.parse(self, m.get("device_ips"), f"{what}.device_ips", True)
        r["host_ip"] = _IpSource.parse(self, m.get("host_ip"), f"{what}.host_ip", False)
        own = {h for h, *_ in r["hosts"]}
        for src in (r["device_ips"], r["host_ip"]):
            if src and src.explicit:
                self._known(list(src.explicit), own, src.node, f"super node {r['name']!r}")
        return r

    def _known(
        self,
        hosts: list[str],
        all_hosts: set[str],
        node: yaml.Node | None,
        scope: str = "any super node",
    ) -> list[str]:
        unknown = [h for h in hosts if h not in all_hosts]
        if unknown:
            close = difflib.get_close_matches(unknown[0], sorted(all_hosts)[:5000], n=1)
            hint = f"did you mean {close[0]!r}?" if close else "list only hosts of the super nodes"
            more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
            self.err(node, f"host {unknown[0]!r}{more} is not in {scope}", hint)
        return [h for h in hosts if h in all_hosts]

    def _merge_spec(self, layers: list[dict[str, _Val]], sn_loc: Loc, sn_name: str) -> NodeSpec:
        merged: dict[str, _Val] = {}
        for layer in layers:
            merged.update(layer)
        if "devices" not in merged:
            if self._spec_broken:  # a bad node_defaults key was reported: no cascade
                return NodeSpec(devices=0, device_groups=())
            self.err(
                sn_loc,
                f"devices per node is not set for super node {sn_name!r}",
                "set node_defaults.devices (or per super node / node_overrides)",
            )
            return NodeSpec(devices=0, device_groups=())
        devices = merged["devices"].value
        groups_val = merged.get("device_groups")
        if groups_val is None:
            groups = (tuple(range(devices)),)
        else:
            groups = groups_val.value
            dev_val = merged["devices"]
            where = groups_val if groups_val.rank >= dev_val.rank else dev_val
            for message in check_device_groups(devices, groups):
                self.err(
                    where.loc,
                    message,
                    "device groups must split 0..devices-1 into disjoint islands,"
                    " e.g. [[0,1,2,3],[4,5,6,7]]",
                )
        nics = merged.get("nics")
        hcas = nics.value.hcas if nics is not None else ()
        if hcas and devices % len(hcas) and len(hcas) % devices:
            self.err(
                nics.loc,
                f"{len(hcas)} HCAs match no device layout of {devices} devices per node",
                "list one HCA per device, one per group of devices (a divisor of the devices),"
                " or several per device (a multiple)",
            )
        kw = {k: v.value for k, v in merged.items() if k not in ("devices", "device_groups")}
        return NodeSpec(devices=devices, device_groups=groups, **kw)

    # -- device and host IPs ------------------------------------------------------------
    def _render_ips(
        self,
        sources: tuple[_IpSource | None, ...],
        host: str,
        fields: dict[str, int],
        devices: int,
    ) -> tuple[str, ...] | None:
        """IPs of one node: explicit values first (super node, then site), then a pattern."""
        present = [s for s in sources if s is not None]
        if not present:  # the common case (non-Ascend): no IPs at all
            return None
        target = self.src.device_ip_src if present[0].devices else self.src.host_ip_src
        for src in present:
            if host in src.explicit:
                value, loc = src.explicit[host]
                target[host] = loc
                return value
        for src in present:
            if src.pattern is not None:
                target[host] = src.pattern_loc
                if not src.devices:
                    return (render_pattern(src.pattern, fields),)
                return tuple(
                    render_pattern(src.pattern, {**fields, "dev": d}) for d in range(devices)
                )
        return None

    def _ips_complete(self, supernodes: list[SuperNode]) -> None:
        with_ips = [n for sn in supernodes for n in sn.nodes if n.device_ips]
        if not with_ips:
            return
        missing = [n.hostname for sn in supernodes for n in sn.nodes if not n.device_ips]
        if missing:
            loc = self.src.device_ip_src.get(with_ips[0].hostname)
            self.err(
                loc,
                f"device IPs are missing for {len(missing)} node(s), e.g. {missing[0]}",
                "give a device_ips pattern or list every node",
            )

    # -- links, env, bench, paths ---------------------------------------------------------
    def _links(self, item: tuple | None, root: yaml.Node) -> dict[str, LinkLevel]:
        if item is None:
            self.err(
                root,
                "the site config is missing required key 'links'",
                "links: {node: {...}, supernode: {...}, inter: {...}}",
            )
            return {}
        m = self.mapping(item[1], "links", (*LINK_LEVELS, CROSS_ISLAND), LINK_LEVELS)
        out: dict[str, LinkLevel] = {}
        for level, (_, vnode) in (m or {}).items():
            lm = self.mapping(vnode, f"links.{level}", LINK_KEYS + tuple(OLD_LINK_KEYS))
            if lm is None:
                continue
            for old, key in OLD_LINK_KEYS.items():
                if old in lm:
                    self.err(
                        lm.pop(old)[0],
                        f"links.{level}.{old} is the old name: the value is in GB/s "
                        f"(gigabytes per second), rename the key to {key}",
                    )
                elif key not in lm:
                    self.err(vnode, f"links.{level} is missing required key {key!r}")
            if "latency_us" not in lm:
                self.err(vnode, f"links.{level} is missing required key 'latency_us'")
            vals: dict[str, Any] = {}
            # Ranges are checked here, key by key: a missing key must not hide a bad value.
            limits = {
                "bandwidth_GBps": {"above": 0.0, "hint": "GB/s per device, one direction"},
                "latency_us": {"minimum": 0.0, "hint": "microseconds"},
            }
            for key in ("bandwidth_GBps", "latency_us"):
                if key in lm:
                    self.src.links[(level, key)] = self.loc(lm[key][1])
                    vals[key] = self.number(lm[key][1], f"links.{level}.{key}", **limits[key])
            kind = self.text(lm["kind"][1], f"links.{level}.kind") if "kind" in lm else ""
            if vals.get("bandwidth_GBps") is not None and vals.get("latency_us") is not None:
                out[level] = LinkLevel(
                    level, vals["bandwidth_GBps"], vals["latency_us"], kind or ""
                )
        return {lvl: out[lvl] for lvl in (*LINK_LEVELS, CROSS_ISLAND) if lvl in out}

    def _env_profiles(self, node: yaml.Node) -> dict[str, EnvProfile]:
        out: dict[str, EnvProfile] = {}
        for name, (_, vnode) in (self.mapping(node, "env_profiles", None) or {}).items():
            pairs = []
            for var, (knode, val) in (
                self.mapping(vnode, f"env_profiles.{name}", None) or {}
            ).items():
                if not (var.isascii() and var.isidentifier()):
                    self.err(
                        knode,
                        f"bad environment variable name {var!r}",
                        "letters, digits and '_', not starting with a digit",
                    )
                    continue
                text = self.text(val, f"env_profiles.{name}.{var}", allow_empty=True)
                if text is not None:
                    pairs.append((var, text))
            out[name] = EnvProfile(name, tuple(pairs))
        return out

    def _bench(self, node: yaml.Node) -> BenchSettings:
        m = self.mapping(node, "bench", BENCH_KEYS) or {}
        kw: dict[str, Any] = {}
        if "regression_pct" in m:
            v = self.number(m["regression_pct"][1], "bench.regression_pct", hint="percent")
            if v is not None and not 0 < v < 100:
                self.err(
                    m["regression_pct"][1], f"bench.regression_pct must be in (0, 100), got {v:g}"
                )
            elif v is not None:
                kw["regression_pct"] = v
        if "baseline_runs" in m:
            v = self.integer(m["baseline_runs"][1], "bench.baseline_runs", 1, 10_000)
            if v is not None:
                kw["baseline_runs"] = v
        if "sizes" in m:
            items = self.seq(m["sizes"][1], "bench.sizes") or []
            if len(items) > 1000:
                self.err(m["sizes"][1], "bench.sizes lists more than 1000 sizes")
                items = []
            sizes = [self.integer(s, "bench.sizes item", 1, 1 << 40, "bytes") for s in items]
            if None not in sizes:
                kw["sizes"] = tuple(sizes)
        if "min_busbw_gbps" in m:
            floors = []
            scopes = (*LINK_LEVELS, "site")
            for scope, (_k, vnode) in (
                self.mapping(m["min_busbw_gbps"][1], "bench.min_busbw_gbps", scopes) or {}
            ).items():
                v = self.number(vnode, f"bench.min_busbw_gbps.{scope}", above=0.0, hint="GB/s")
                if v is not None:
                    floors.append((scope, v))
            kw["min_busbw_gbps"] = tuple(floors)
        return BenchSettings(**kw)

    def _restarts(self, node: yaml.Node) -> tuple[tuple[str, int], ...]:
        m = self.mapping(node, "restarts", RESTART_CAUSES) or {}
        out = []
        for cause, (_, vnode) in m.items():
            v = self.integer(vnode, f"restarts.{cause}", 0, 100_000, "restarts per job chain")
            if v is not None:
                out.append((cause, v))
        return tuple(out)

    def _doctor(self, node: yaml.Node) -> DoctorSettings:
        """``doctor:``: fractions in (0, 1], percentages in (0, 100), floors >= 0."""
        m = self.mapping(node, "doctor", DOCTOR_KEYS) or {}
        kw: dict[str, Any] = {}
        for key in DOCTOR_NUMBERS:
            if key not in m:
                continue
            vnode = m[key][1]
            v = self.number(vnode, f"doctor.{key}")
            if v is None:
                continue
            if key.startswith("bandwidth_") and not 0 < v <= 1:
                self.err(vnode, f"doctor.{key} must be a fraction in (0, 1], got {v:g}")
            elif key == "slow_pct" and not 0 < v < 100:
                self.err(vnode, f"doctor.slow_pct must be in (0, 100), got {v:g}")
            elif v < 0:
                self.err(vnode, f"doctor.{key} must be >= 0, got {v:g}")
            else:
                kw[key] = v
        for key in ("size", "storage_mb"):
            if key in m:
                v = self.integer(m[key][1], f"doctor.{key}", 1)
                if v is not None:
                    kw[key] = v
        if "checkpoint_dir" in m:
            v = self.text(m["checkpoint_dir"][1], "doctor.checkpoint_dir")
            if v is not None:
                kw["checkpoint_dir"] = v
        warn, fail = kw.get("bandwidth_warn", 0.6), kw.get("bandwidth_fail", 0.4)
        if fail > warn:
            self.err(node, f"doctor.bandwidth_fail ({fail:g}) is above bandwidth_warn ({warn:g})")
        return DoctorSettings(**kw)

    def _paths(self, node: yaml.Node) -> PathSettings:
        m = self.mapping(node, "paths", PATH_KEYS) or {}
        kw = {}
        for key, (_, vnode) in m.items():
            v = self.text(vnode, f"paths.{key}")
            if v is not None:
                kw[key] = v
        return PathSettings(**kw)


@dataclass
class _IpSource:
    """device_ips / host_ip of the site or of one super node: a pattern and explicit values."""

    node: yaml.Node
    devices: bool
    pattern: str | None
    pattern_loc: Loc | None
    explicit: dict[str, tuple[tuple[str, ...], Loc]]

    @classmethod
    def parse(cls, b: _Builder, item: tuple | None, what: str, devices: bool) -> _IpSource | None:
        if item is None:
            return None
        node = item[1]
        pattern = None
        pattern_node = None
        explicit: dict[str, tuple[tuple[str, ...], Loc]] = {}
        if isinstance(node, yaml.ScalarNode):
            pattern_node = node
        else:
            m = b.mapping(node, what, IP_KEYS)
            if m is None:
                return None
            if "pattern" in m:
                pattern_node = m["pattern"][1]
            if "nodes" in m:
                for host, (_k, vnode) in (
                    b.mapping(m["nodes"][1], f"{what}.nodes", None) or {}
                ).items():
                    if devices:
                        ips = b.str_list(vnode, f"{what}.nodes.{host}")
                    else:
                        one = b.text(vnode, f"{what}.nodes.{host}")
                        ips = (one,) if one is not None else None
                    if ips is not None:
                        explicit[host] = (ips, b.loc(vnode))
        if pattern_node is not None:
            text = b.text(pattern_node, f"{what} pattern")
            fields = IP_FIELDS if devices else tuple(f for f in IP_FIELDS if f != "dev")
            if text is not None and _check_pattern(b, pattern_node, text, fields):
                pattern = text
        if pattern is None and not explicit:
            if pattern_node is None and not isinstance(node, yaml.ScalarNode):
                b.err(
                    node,
                    f"{what} needs a pattern or nodes",
                    'e.g. pattern: "10.{pod}.{node}.{dev}"',
                )
            return None
        loc = b.loc(pattern_node) if pattern_node is not None else None
        return cls(node, devices, pattern, loc, explicit)


def _check_pattern(b: _Builder, node: yaml.Node, text: str, fields: tuple[str, ...]) -> bool:
    try:
        render_pattern(text, dict.fromkeys(fields, 0), fields)
    except ValueError as exc:
        b.err(
            node,
            f"bad IP pattern {text!r}: {exc}",
            "fields: " + " ".join("{" + f + "}" for f in fields) + ", each may add +N",
        )
        return False
    return True


def render_pattern(
    pattern: str, values: dict[str, int], fields: tuple[str, ...] = IP_FIELDS
) -> str:
    """Fill ``{field}`` / ``{field+N}`` in an IP pattern ('10.{pod}.{node+1}.{dev}')."""
    out = []
    for literal, field_name, spec, conv in string.Formatter().parse(pattern):
        out.append(literal)
        if field_name is None:
            continue
        if spec or conv:
            raise ValueError(f"format spec in {{{field_name}}} is not supported")
        base, plus, offset = field_name.partition("+")
        base = base.strip()
        if base not in fields:
            raise ValueError(f"unknown field {{{field_name}}}")
        add = 0
        if plus:
            if not offset.strip().isdigit():
                raise ValueError(f"offset in {{{field_name}}} must be a number")
            add = int(offset)
        out.append(str(values[base] + add))
    return "".join(out)
