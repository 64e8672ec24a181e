"""Slurm hostlists, as thin wrappers over ClusterShell's NodeSet.

NodeSet sorts and de-duplicates, but a site config lists nodes in *physical* order (rack, slot)
and duplicates are errors the validator must see. So ``expand`` keeps the order as written: it
splits the expression at top-level commas and at commas inside brackets (plain string scanning)
and lets NodeSet expand each single range, in sequence. ``fold`` is NodeSet's sorted fold;
``fold_ordered`` folds without reordering (runs that are already in NodeSet order).
"""

from __future__ import annotations

import itertools
import re
import string
from collections.abc import Iterable

# ClusterShell.NodeSet costs ~25 ms to import, its RangeSet a few: they are imported where
# needed (multi-bracket expressions, folding, ranges other than LO-HI), so the common 1-D
# case keeps the login path light.

# Refuse expressions that would expand to absurd sizes (typos like n[0-99999999]).
MAX_HOSTS = 1_000_000
# Host names are what Slurm's NodeName= takes: letters, digits, '-', '_', '.'; plus the
# hostlist syntax itself. Anything else (ClusterShell's set operators and @groups, spaces,
# '=', '#', control characters, non-ASCII) is refused before ClusterShell sees it.
_HOST_CHARS = set(string.ascii_letters + string.digits + "-_.")
_ALLOWED = _HOST_CHARS | set("[],")
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
_BAD_CHAR = re.compile(r"[^A-Za-z0-9_.\[\],-]")


class HostlistError(ValueError):
    """A hostlist expression that cannot be expanded."""


def _split_top(expr: str) -> list[str]:
    """Split at commas outside brackets; checks the brackets balance."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(expr):
        if ch == "[":
            if depth:
                raise HostlistError(f"nested '[' at position {i + 1}")
            depth = 1
        elif ch == "]":
            if not depth:
                raise HostlistError(f"unmatched ']' at position {i + 1}")
            depth = 0
        elif ch == "," and not depth:
            parts.append(expr[start:i])
            start = i + 1
    if depth:
        raise HostlistError("missing ']'")
    parts.append(expr[start:])
    return parts


def _segments(piece: str) -> list[str | list[str]]:
    """'a[1-2,5]b[3]' -> ['a', ['1-2', '5'], 'b', ['3']]: literals and bracket range lists."""
    out: list[str | list[str]] = []
    rest = piece
    while rest:
        lb = rest.find("[")
        if lb < 0:
            out.append(rest)
            break
        rb = rest.index("]", lb)
        if lb:
            out.append(rest[:lb])
        ranges = rest[lb + 1 : rb].split(",")
        if any(not r for r in ranges):
            raise HostlistError(f"empty range in '{piece}'")
        for r in ranges:
            _check_range(r, piece)
        out.append(ranges)
        rest = rest[rb + 1 :]
    return out


def _expand_piece(piece: str) -> list[str]:
    if not piece:
        raise HostlistError("empty host name (stray comma?)")
    segs = _segments(piece)
    if "[" not in piece:
        return [piece]
    literal_only = [s for s in segs if isinstance(s, str)]
    if not literal_only:
        raise HostlistError(f"'{piece}' has ranges but no host name prefix")
    if sum(isinstance(seg, list) for seg in segs) == 1:
        return _expand_1d(piece, segs)
    groups = [s if isinstance(s, list) else [None] for s in segs]
    hosts: list[str] = []
    for combo in itertools.product(*groups):
        size = 1
        for r in combo:
            size *= _range_size(r) if r is not None else 1
        if len(hosts) + size > MAX_HOSTS:
            raise HostlistError(f"'{piece}' expands to more than {MAX_HOSTS} hosts")
        text = "".join(
            seg if isinstance(seg, str) else f"[{r}]" for seg, r in zip(segs, combo, strict=True)
        )
        from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet, NodeSetException

        try:
            ns = NodeSet(text, resolver=RESOLVER_NOGROUP)
        except (NodeSetException, ValueError, IndexError):
            raise HostlistError(f"bad range in '{piece}'") from None
        if len(hosts) + len(ns) > MAX_HOSTS:
            raise HostlistError(f"'{piece}' expands to more than {MAX_HOSTS} hosts")
        hosts.extend(ns)
    return hosts


def _expand_1d(piece: str, segs: list[str | list[str]]) -> list[str]:
    """The common case 'gb[001-018]': one bracket, expanded by RangeSet (4x faster)."""
    k = next(i for i, seg in enumerate(segs) if isinstance(seg, list))
    prefix = "".join(segs[:k])  # type: ignore[arg-type]
    suffix = "".join(segs[k + 1 :])  # type: ignore[arg-type]
    hosts: list[str] = []
    for r in segs[k]:
        if _range_size(r) > MAX_HOSTS:  # before RangeSet, which would build the whole set
            raise HostlistError(f"'{piece}' expands to more than {MAX_HOSTS} hosts")
        lo, dash, hi = r.partition("-")
        if dash and lo.isdigit() and hi.isdigit():  # checked LO-HI: no RangeSet needed
            # equal widths: every number between has that width (zero-padded or not);
            # unequal widths never pad (_check_range refuses '008-12' and '1-018')
            width = len(lo) if len(lo) == len(hi) else 0
            if len(hosts) + int(hi) - int(lo) + 1 > MAX_HOSTS:
                raise HostlistError(f"'{piece}' expands to more than {MAX_HOSTS} hosts")
            hosts += [f"{prefix}{i:0{width}d}{suffix}" for i in range(int(lo), int(hi) + 1)]
            continue
        from ClusterShell.RangeSet import RangeSet, RangeSetException

        try:
            rs = RangeSet(r)
        except (RangeSetException, ValueError, IndexError):
            raise HostlistError(f"bad range '{r}' in '{piece}'") from None
        if len(hosts) + len(rs) > MAX_HOSTS:
            raise HostlistError(f"'{piece}' expands to more than {MAX_HOSTS} hosts")
        hosts.extend(f"{prefix}{i}{suffix}" for i in rs)
    return hosts


def _check_range(r: str, piece: str) -> None:
    """Slurm's range syntax: N or LO-HI, LO <= HI, the same zero padding on both ends."""
    m = _RANGE.match(r)
    if not m:
        raise HostlistError(f"range '{r}' in '{piece}' is not N or LO-HI (digits only)")
    lo, hi = m.group(1), m.group(2)
    if hi is None:
        return
    if int(lo) > int(hi):
        raise HostlistError(f"range '{r}' in '{piece}' goes backwards")
    if len(lo) == len(hi):
        return
    # Slurm's rule: a zero-padded end fixes the width of every name in the range, so the other
    # end must have that width too, whichever end is padded ('n[001-18]', 'n[1-018]').
    for padded, other in ((lo, hi), (hi, lo)):
        if len(padded) > 1 and padded.startswith("0"):
            raise HostlistError(
                f"range '{r}' in '{piece}' pads {padded} to {len(padded)} digits but not {other}"
            )


def _range_size(r: str) -> int:
    """Size of 'a-b' (or 1 for 'a'); 0 when it does not parse (RangeSet reports that)."""
    lo, _, hi = r.partition("-")
    if not hi:
        return 1
    if lo.isdigit() and hi.isdigit():
        return int(hi) - int(lo) + 1
    return 0


def expand(expr: str) -> list[str]:
    """Expand a Slurm hostlist in the order written; duplicates are kept (callers report them).

    >>> expand("n[3,1-2],x")
    ['n3', 'n1', 'n2', 'x']
    """
    return _expand(expr)


def expand_paths(pattern: str) -> list[str]:
    """Expand a bracketed path pattern (``/dev/nvidia[0-7]``) with the hostlist rules; '/' is
    allowed here, set operators and groups are not."""
    return _expand(pattern, "/")


def _expand(expr: str, also: str = "") -> list[str]:
    _check_chars(expr, also)
    hosts: list[str] = []
    for piece in _split_top(expr):
        hosts.extend(_expand_piece(piece))
    return hosts


def _check_chars(expr: str, also: str = "") -> None:
    if not isinstance(expr, str) or not expr.strip():
        raise HostlistError("empty hostlist")
    if not _BAD_CHAR.search(expr):  # the common case, without a Python loop per character
        return
    for i, ch in enumerate(expr):
        if ch not in _ALLOWED and ch not in also:
            raise HostlistError(
                f"character {ch!r} is not allowed in a hostlist (position {i + 1};"
                " host names use letters, digits, '-', '_' and '.')"
            )


def size(expr: str) -> int:
    """How many hosts ``expr`` names, without expanding it (a bound can be checked first).

    Raises HostlistError for bad syntax, like ``expand``.
    """
    _check_chars(expr)
    total = 0
    for piece in _split_top(expr):
        if not piece:
            raise HostlistError("empty host name (stray comma?)")
        n = 1
        for seg in _segments(piece):
            if isinstance(seg, list):
                n *= sum(_range_size(r) for r in seg)
        total += n
    return total


def fold(hosts: Iterable[str]) -> str:
    """Fold hosts into one sorted, de-duplicated hostlist expression ('n[0-3],x')."""
    from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet

    return str(NodeSet.fromlist(list(hosts), resolver=RESOLVER_NOGROUP))


def sort_hosts(hosts: Iterable[str]) -> list[str]:
    """Hosts in Slurm's natural order (``n2`` before ``n10``), duplicates dropped."""
    from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet

    return list(NodeSet.fromlist(list(hosts), resolver=RESOLVER_NOGROUP))


def fold_ordered(hosts: Iterable[str]) -> str:
    """Fold hosts without changing their order: ``expand(fold_ordered(h)) == list(h)``.

    Consecutive runs that are already in NodeSet order fold together; a step backwards starts a
    new comma-separated run. Duplicates are not allowed (ValueError).
    """
    seq = list(hosts)
    if not seq:
        return ""
    from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet

    ordered = list(NodeSet.fromlist(seq, resolver=RESOLVER_NOGROUP))
    if len(ordered) != len(seq):
        raise ValueError("fold_ordered: duplicate hosts")
    if ordered == seq:
        return fold(seq)
    pos = {h: i for i, h in enumerate(ordered)}
    runs: list[list[str]] = [[seq[0]]]
    for prev, host in itertools.pairwise(seq):
        if pos[host] < pos[prev]:
            runs.append([host])
        else:
            runs[-1].append(host)
    return ",".join(fold(run) for run in runs)


def count(expr: str) -> int:
    """Number of hosts an expression names (with duplicates)."""
    return len(expand(expr))
