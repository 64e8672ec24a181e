"""The whole-super-node rounding rule, written once.

snrun (``launch.request``) and the job_submit.lua plugin (``site.job_submit``, for plain
``sbatch``) must put ``-N n`` on the same super nodes, also on a site whose super nodes differ
in size. The rule: the fewest nodes on whole super nodes of one size class that hold ``n``;
ties go to fewer super nodes. The plugin does not reimplement it: ``rounding_table`` evaluates
it for every node count the site can hold and the exporter writes the result into the
plugin's generated table.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple


class SizeClass(NamedTuple):
    """The super nodes of one size: nodes each (``job_size``) and how many there are."""

    size: int
    supernodes: int


class Rounded(NamedTuple):
    """``k`` whole super nodes of ``size`` nodes."""

    size: int
    k: int

    @property
    def total(self) -> int:
        return self.size * self.k


def size_classes(job_sizes: Iterable[int]) -> list[SizeClass]:
    """Size classes of a set of super nodes (their ``job_size``), smallest size first."""
    counts: dict[int, int] = {}
    for size in job_sizes:
        counts[size] = counts.get(size, 0) + 1
    return [SizeClass(size, counts[size]) for size in sorted(counts)]


def round_up(classes: Sequence[SizeClass], n: int, *, multi: bool = True) -> Rounded | None:
    """Whole super nodes for ``n`` nodes: fewest nodes, then fewest super nodes. ``multi``:
    more than one super node allowed. None when nothing holds ``n``."""
    best: Rounded | None = None
    for cls in classes:
        if n < 1 or cls.size < 1:
            continue
        k = math.ceil(n / cls.size)
        if k > cls.supernodes or (k > 1 and not multi):
            continue
        cand = Rounded(cls.size, k)
        if best is None or (cand.total, cand.k) < (best.total, best.k):
            best = cand
    return best


def capacity(classes: Sequence[SizeClass]) -> int:
    """The most nodes one job can have on whole super nodes of one size class."""
    return max((c.size * c.supernodes for c in classes), default=0)


def rounding_table(classes: Sequence[SizeClass], *, multi: bool) -> list[Rounded | None]:
    """``round_up`` for n = 1 .. capacity (index n - 1): what the Lua plugin looks up."""
    return [round_up(classes, n, multi=multi) for n in range(1, capacity(classes) + 1)]
