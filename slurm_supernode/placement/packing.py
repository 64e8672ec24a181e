"""Which node of the allocation takes which block of ranks: pack groups into super nodes.

Why not physical order alone: ranks fill nodes in order (node rank i holds ranks i*nproc ..
(i+1)*nproc-1), so the only freedom snrun has is which *node* gets node rank i. Filling super
nodes in physical order splits groups whenever a block of inner ranks does not divide a super
node (3 super nodes of 4 nodes, tp=8 pp=4: two of the four pipeline stages straddle super
nodes, 16 DP groups cross where 8 is the minimum). Node crossings do not depend on this choice
(they follow from nproc and the layout); super-node crossings do.

The method, on node *slots* (node ranks): dimensions are taken in priority order (TP first,
then EP/CP, then DP, then PP: by the bytes they move). Level j joins the slots that share a group
of any of the first j dimensions (connected components); a level-j unit is such a component.
Top down, as many whole units of the coarsest level as fit go into super nodes (each super node
holds the nodes of the allocation in it: its capacity); the units left over are split into
their units of the level below and placed the same way into the room left, down to single
slots. A whole level-j unit keeps every group of the first j dimensions inside one super node,
so the count of whole units per level is the most the capacities allow
(sum over super nodes of floor(capacity / unit size)).

``place`` then judges that map against the minimum computed apart from it (``optimum.py``):
where the bounds prove it, it stays; otherwise the exact search (small allocations) either
proves it optimal or returns a better map, which is used. tests/placement/test_optimum.py and
test_packing.py check the crossings against a brute force over every assignment.

Pure and deterministic: super nodes in site order, slots and units in rank order, ties by order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

from slurm_supernode.placement import optimum


class Line(NamedTuple):
    """The groups of one dimension: ``size`` ranks ``stride`` apart (mixed radix)."""

    dim: str
    size: int
    stride: int


class _Components:
    """Union-find over slots (small, iterative, path halving)."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        if ra > rb:
            ra, rb = rb, ra
        self.parent[rb] = ra  # smallest slot is the root: deterministic
        return True


def group_slots(line: Line, nproc: int, slots: int) -> Iterator[list[int]]:
    """Slot sets of the groups of one dimension (one per distinct set, rank order)."""
    size, stride = line.size, line.stride
    world = slots * nproc
    if size == 1:
        return
    block = size * stride
    if stride % nproc == 0:  # every rank of a group on its own slot: slot arithmetic
        step = stride // nproc
        for start in range(0, slots, block // nproc):
            for first in range(start, start + step):
                yield [first + k * step for k in range(size)]
        return
    if block <= nproc and nproc % block == 0:
        return  # every group inside one node
    seen: set[tuple[int, ...]] = set()
    for start in range(0, world, block):
        for base in range(start, start + stride):
            key = tuple(sorted({(base + k * stride) // nproc for k in range(size)}))
            if len(key) > 1 and key not in seen:
                seen.add(key)
                yield list(key)


def fitting_levels(
    lines: Sequence[Line], nproc: int, capacities: Sequence[int]
) -> list[tuple[Line, list[int]]]:
    """Levels of the dimensions that can keep a group inside a super node at all.

    A dimension whose units (joined with the ones before it) are all larger than the largest
    super node crosses in every group whatever the order; leaving it out of the hierarchy lets
    the dimensions after it pack as if it were not there. Returns [(line, roots per slot)].
    """
    slots = sum(capacities)
    largest = max(capacities)
    uf = _Components(slots)
    out: list[tuple[Line, list[int]]] = []
    seen: set[tuple[int, int]] = set()
    for line in lines:
        if line.size == 1 or (line.size, line.stride) in seen:
            continue  # no groups, or the same groups as a dimension before (etp = tp, ...)
        seen.add((line.size, line.stride))
        trial = _Components(0)
        trial.parent = list(uf.parent)
        changed = False
        for members in group_slots(line, nproc, slots):
            first = members[0]
            for other in members[1:]:
                changed |= trial.union(first, other)
        if not changed:
            continue  # no new joins: same units as the level before
        roots = [trial.find(x) for x in range(slots)]
        sizes: dict[int, int] = {}
        for r in roots:
            sizes[r] = sizes.get(r, 0) + 1
        if min(sizes.values()) <= largest:
            uf = trial
            out.append((line, roots))
    return out


def pack(lines: Sequence[Line], nproc: int, capacities: Sequence[int]) -> list[int]:
    """Super node index (into ``capacities``) of every slot, packing groups by priority.

    ``lines``: the dimensions in priority order (highest first); ``capacities``: allocated
    nodes per super node, in site order; their sum is the number of slots.
    """
    slots = sum(capacities)
    levels = [roots for _, roots in fitting_levels(lines, nproc, capacities)]
    room = list(capacities)
    out = [-1] * slots

    def units_at(level: int, members: list[int]) -> list[list[int]]:
        """Split ``members`` (slots, rank order) into its units of ``level`` (-1: slots)."""
        if level < 0:
            return [[x] for x in members]
        roots = levels[level]
        by_root: dict[int, list[int]] = {}
        for x in members:
            by_root.setdefault(roots[x], []).append(x)
        return list(by_root.values())

    def place(level: int, units: list[list[int]]) -> None:
        left: list[list[int]] = []

        # largest units first (rank order among equals); for each size, super nodes with the
        # least room that still holds one first (best fit), as many units as fit in each
        def room_key(k: int) -> tuple[int, int]:
            return (room[k], k)

        by_size: dict[int, list[list[int]]] = {}
        for unit in sorted(units, key=lambda u: u[0]):
            by_size.setdefault(len(unit), []).append(unit)
        for size in sorted(by_size, reverse=True):
            todo = by_size[size]
            i = 0
            # single slots: site order, so nothing moves where no group gains from it
            order = range(len(room)) if size == 1 else sorted(range(len(room)), key=room_key)
            for k in order:
                while i < len(todo) and room[k] >= size:
                    for x in todo[i]:
                        out[x] = k
                    room[k] -= size
                    i += 1
                if i == len(todo):
                    break
            left += todo[i:]
        if not left:
            return
        if level < 0:  # single slots always fit somewhere: capacities sum to the slots
            raise AssertionError("packing ran out of room")
        sub = [u for unit in sorted(left, key=lambda u: u[0]) for u in units_at(level - 1, unit)]
        place(level - 1, sub)

    top = len(levels) - 1
    place(top, units_at(top, list(range(slots))))
    return out


def place(
    lines: Sequence[Line], nproc: int, capacities: Sequence[int], *, exact: bool = True
) -> tuple[list[int], optimum.Minimum]:
    """Super node of every slot, and the minimum it is judged against (``optimum.minimum``).

    The level-by-level packing above; where it does not reach the capacity bounds and an
    exact search fits its budget (small allocations), the search's assignment is taken
    instead, so the map sits at the minimum whenever the minimum is known. ``exact=False``:
    the packing alone (no search), for callers that pack many layouts (recommend).
    """
    slot_sn = pack(lines, nproc, capacities)
    best = optimum.minimum(lines, nproc, capacities, witness=slot_sn, exact=exact)
    if best.slot_sn is not None:
        slot_sn = list(best.slot_sn)
    return slot_sn, best
