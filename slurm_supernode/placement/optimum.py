"""The fewest super-node crossings any contiguous layout reaches: computed apart from the packer.

Why: ``snrun plan`` must show that its placement is optimal, so the minimum it prints cannot
come from the packer it judges. The freedom is the same as the packer's: ranks fill nodes in
order (node rank i holds ranks i*nproc ..), so a layout is an assignment of node ranks
(*slots*) to super nodes with the allocation's node counts (devices inside a node change no
node or super-node crossing). The target is the lexicographic minimum in priority order
(``rankmap.PACK_PRIORITY``: TP first, then by the bytes a dimension moves): for each dimension,
the fewest groups crossing a super-node boundary that any assignment reaches, given the
dimensions before it at their minimum (docs/planner.md, "The minimum").

Two exact ways, tried in this order (``minimum``):
- **lower bound reached**: a bound no assignment goes below, from the super nodes' node counts
  alone (a group whose slots outnumber the largest super node crosses; of disjoint equal slot
  sets of size m at most sum(floor(c / m)) stay whole). A dimension is proven at its minimum
  when some assignment reaches every bound up to it: the bounds hold for every assignment, so
  none is lexicographically smaller. That is a proof, not an estimate; the witness is the
  packer's map, the bound is not.
- **exact search**: branch and bound over every assignment (super nodes of equal size are
  interchangeable, so only one empty one is tried), pruned by the crossings already forced;
  run when the bound is not reached and the search stays under ``SEARCH_BUDGET`` steps.
Otherwise the minimum of that dimension and the ones after it is **not computed** (None).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from typing import NamedTuple, Protocol

SEARCH_BUDGET = 20_000  # search steps (slot placements tried): <= ~0.5 s; a count: deterministic
SEARCH_SLOTS = 512  # deepest search (one level per node rank); larger ones are not tried
ENUMERATE_LIMIT = 1 << 16  # ranks: groups that split nodes unevenly are listed rank by rank

LOWER_BOUND = "lower bound reached"
SEARCH = "exact search"

# the slot sets of one dimension's groups that span nodes, each with how many groups it holds
SlotSets = list[tuple[tuple[int, ...], int]]
# a set's closure in after_bound: (the earlier sets it touches, its own slots)
_Closure = tuple[tuple[int, ...], tuple[int, ...]]


class GroupLine(Protocol):
    """The groups of one dimension, as ``packing.Line`` describes them (packing imports this
    module, so the type is named by its fields)."""

    @property
    def dim(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def stride(self) -> int: ...


class Minimum(NamedTuple):
    """Per dimension the fewest groups crossing super nodes (None: not computed), and how."""

    per_dim: dict[str, int | None]
    method: dict[str, str | None]
    slot_sn: tuple[int, ...] | None = None  # an assignment reaching it (search only)


def slot_sets(size: int, stride: int, nproc: int, slots: int) -> tuple[SlotSets, bool] | None:
    """The node slots of a dimension's groups: (sets spanning nodes, disjoint and regular?).

    Groups are ``base + k*stride`` (k < size) for every base with coordinate 0 (mixed radix);
    a rank r sits on slot r // nproc. None when the groups split nodes unevenly and the world
    is too large to list them rank by rank.
    """
    if size == 1:
        return [], True
    block = size * stride
    if block <= nproc and nproc % block == 0:
        return [], True  # every group inside one node
    if stride % nproc == 0:  # one rank per slot: lines of slots stride/nproc apart
        step = stride // nproc
        return [
            (tuple(first + k * step for k in range(size)), nproc)
            for start in range(0, slots, size * step)
            for first in range(start, start + step)
        ], True
    if nproc % stride == 0 and block % nproc == 0:  # each group covers a run of whole nodes
        run = block // nproc
        return [(tuple(range(s, s + run)), stride) for s in range(0, slots, run)], True
    world = slots * nproc
    if world > ENUMERATE_LIMIT:
        return None
    counts: dict[tuple[int, ...], int] = {}
    for start in range(0, world, block):
        for base in range(start, start + stride):
            key = tuple(sorted({(base + k * stride) // nproc for k in range(size)}))
            if len(key) > 1:
                counts[key] = counts.get(key, 0) + 1
    return list(counts.items()), False


def crossings(sets: SlotSets, slot_sn: Sequence[int]) -> int:
    """Groups on these slot sets whose slots lie in more than one super node."""
    out = 0
    for members, weight in sets:
        home = slot_sn[members[0]]
        if any(slot_sn[s] != home for s in members):
            out += weight
    return out


def lower_bound(sets: SlotSets, regular: bool, capacities: Sequence[int]) -> int:
    """Groups that cross in every assignment, from the node counts alone."""
    largest = max(capacities)
    forced = sum(w for m, w in sets if len(m) > largest)
    if not regular or not sets:
        return forced
    size = len(sets[0][0])  # regular: disjoint sets of one size (one weight)
    whole = min(len(sets), sum(c // size for c in capacities))
    return sum(w for _, w in sets) - whole * sets[0][1]


def tight(sets: SlotSets, regular: bool, capacities: Sequence[int]) -> bool:
    """Whether the capacities, not the sets, limit the whole sets: then at this dimension's
    bound every super node holds exactly floor(c / m) whole sets (used by ``after_bound``)."""
    if not regular or not sets:
        return False
    size = len(sets[0][0])
    return sum(c // size for c in capacities) < len(sets)


def after_bound(sets: SlotSets, earlier: SlotSets, capacities: Sequence[int], slots: int) -> int:
    """Groups of ``sets`` that cross in every assignment keeping ``earlier`` at its bound.

    ``earlier``: a tight dimension before (``tight``) of set size m, so super node k holds
    exactly q = floor(c_k / m) of its sets whole and r = c_k - q*m other slots. A set S of this
    dimension whole in super node k has at most its q largest overlaps with earlier sets inside
    those whole ones, so it needs at least need(S) = |S| - (their sum) of the r other slots;
    whole sets are disjoint, so super node k holds at most as many as the smallest needs fit
    in r (and floor(c_k / |S|)). The earlier sets S touches outside those q must be split
    ones (a whole one elsewhere would split S), and only sets - sum(q) are split: S cannot be
    whole where it needs more. Needs ``sets`` disjoint (regular).
    """
    size = len(earlier[0][0])
    profiles, closure, shared = _overlaps(sets, earlier, slots)
    # S inside whole earlier sets only: its closure (the t sets it touches) is whole in the
    # super node; closures disjoint or equal with n such S each: floor(q / t) * n at most
    inside = None
    if shared and len(set(map(len, closure))) == 1 and len(set(closure.values())) == 1:
        inside = (len(next(iter(closure))), next(iter(closure.values())))
    m = len(sets[0][0])
    split = len(earlier) - sum(c // size for c in capacities)
    whole = 0
    for c in capacities:
        whole += min(_whole_fit(c, size, m, profiles, inside, split), c // m)
    whole = min(whole, len(sets))
    return sum(w for _, w in sets) - whole * sets[0][1]


def _overlaps(
    sets: SlotSets, earlier: SlotSets, slots: int
) -> tuple[dict[tuple[int, ...], int], dict[tuple[int, ...], int], bool]:
    """after_bound's scan of ``sets`` against ``earlier``: how many sets have each overlap
    profile (slots in no earlier set, then the overlap sizes, largest first); per tuple of
    earlier sets touched, how many sets touch them with no free slot; and whether those
    closures are disjoint or equal."""
    owner = [-1] * slots
    for t, (members, _) in enumerate(earlier):
        for x in members:
            owner[x] = t
    profiles: dict[tuple[int, ...], int] = {}  # overlap sizes (largest first) -> sets
    closure: dict[tuple[int, ...], int] = {}  # earlier sets touched -> sets touching them
    users: dict[int, tuple[int, ...]] = {}
    shared = True  # closures disjoint or equal
    for members, _ in sets:
        seen: dict[int, int] = {}
        for x in members:
            seen[owner[x]] = seen.get(owner[x], 0) + 1
        free = seen.pop(-1, 0)  # slots in no earlier set: never inside a whole one
        key = (free, *sorted(seen.values(), reverse=True))
        profiles[key] = profiles.get(key, 0) + 1
        touched = tuple(sorted(seen))
        for t in touched:
            shared &= users.setdefault(t, touched) == touched
        closure[touched] = closure.get(touched, 0) + (0 if free else 1)
    return profiles, closure, shared


def _whole_fit(
    c: int,
    size: int,
    m: int,
    profiles: dict[tuple[int, ...], int],
    inside: tuple[int, int] | None,
    split: int,
) -> int:
    """How many sets (of size ``m``) a super node of ``c`` slots can hold whole while it holds
    floor(c / size) earlier sets whole: the smallest needs of its r other slots first."""
    q, r = divmod(c, size)
    needs = sorted(
        (m - sum(key[1 : 1 + q]), n)
        for key, n in profiles.items()
        if len(key) - 1 - min(q, len(key) - 1) <= split
    )  # (free slots one set needs, how many sets have that profile)
    fit = 0
    if inside is not None:  # S inside whole sets counted apart; the others need r
        fit = q // inside[0] * inside[1] if inside[0] else 0
        needs = sorted((max(1, need), n) for need, n in needs)
    for need, n in needs:
        if need == 0:
            fit += n
            continue
        take = min(n, r // need) if r >= need else 0
        fit += take
        r -= take * need
        if take < n:
            break
    return fit


def after_whole(sets: SlotSets, earlier: SlotSets, capacities: Sequence[int], slots: int) -> int:
    """Groups of ``sets`` that cross in every assignment keeping all of ``earlier`` whole.

    Then a super node holds every earlier set it touches whole, so a set S is whole only in
    a super node that holds its closure: S with the earlier sets it touches. At most
    floor(c / |S|) whole sets fit in one of c nodes (they are disjoint), none whose closure
    is larger than c; and when the closures are disjoint or equal, of one size z, with n
    sets each (the product shapes the frameworks make), at most floor(c / z) * n.
    """
    owner = [-1] * slots
    for t, (members, _) in enumerate(earlier):
        for x in members:
            owner[x] = t
    count: dict[_Closure, int] = {}  # closure -> sets with it
    size: dict[_Closure, int] = {}
    users: dict[int, _Closure] = {}  # earlier set -> the closure it is in
    shared = True
    for members, _ in sets:
        touched = tuple(sorted({owner[x] for x in members} - {-1}))
        own = tuple(x for x in members if owner[x] < 0)
        key = (touched, own)
        if key not in count:
            size[key] = len(own) + sum(len(earlier[t][0]) for t in touched)
            for t in touched:
                shared &= users.setdefault(t, key) == key
        count[key] = count.get(key, 0) + 1
    m = len(sets[0][0])
    closures = sorted(size.values())
    by_size: dict[int, int] = {}
    for k, n in count.items():
        by_size[size[k]] = by_size.get(size[k], 0) + n
    sizes = sorted(by_size)
    upto = list(itertools.accumulate(by_size[z] for z in sizes))  # sets of closure <= z
    whole = 0
    for c in capacities:
        i = bisect.bisect_right(sizes, c)
        fit = min(c // m, upto[i - 1] if i else 0)
        if shared and len(set(size.values())) == 1 and len(set(count.values())) == 1:
            fit = min(fit, c // closures[0] * next(iter(count.values())))
        whole += fit
    whole = min(whole, len(sets))
    return sum(w for _, w in sets) - whole * sets[0][1]


def _distinct(
    lines: Sequence[GroupLine], nproc: int, slots: int
) -> tuple[list[tuple[str, tuple[SlotSets, bool] | None]], dict[str, str]]:
    """Distinct dimensions by their groups (etp = tp, edp = dp, ... share theirs)."""
    out: list[tuple[str, tuple[SlotSets, bool] | None]] = []
    alias: dict[str, str] = {}
    seen: dict[tuple[int, int], str] = {}
    for line in lines:
        key = (line.size, line.stride)
        if key in seen:
            alias[line.dim] = seen[key]
            continue
        seen[key] = alias[line.dim] = line.dim
        out.append((line.dim, slot_sets(line.size, line.stride, nproc, slots)))
    return out, alias


def minimum(
    lines: Sequence[GroupLine],
    nproc: int,
    capacities: Sequence[int],
    witness: Sequence[int] | None = None,
    *,
    exact: bool = True,
) -> Minimum:
    """The lexicographic minimum of super-node crossings per dimension (module docstring).

    ``lines``: the dimensions in priority order (``packing.Line``); ``capacities``: allocated
    nodes per super node; ``witness``: an assignment (super node per slot) to test the bounds
    with, usually the packer's; ``exact=False`` skips the search (bounds only).
    """
    slots = sum(capacities)
    dims, alias = _distinct(lines, nproc, slots)
    if len(capacities) < 2:
        return Minimum({d: 0 for d in alias}, dict.fromkeys(alias, LOWER_BOUND))
    known = all(f is not None for _, f in dims)
    have = [crossings(f[0], witness) if f else None for _, f in dims] if witness else None
    bounds, per, how, reached = _bounds(dims, have, capacities, slots)
    slot_sn = None
    if exact and not reached and known and slots <= SEARCH_SLOTS:
        # known: every dimension has its sets, and so the witness a count for each
        start = None
        if have is not None and witness is not None:
            start = (tuple(h for h in have if h is not None), list(witness))
        every = [f[0] for _, f in dims if f is not None]
        result = search(every, capacities, bounds=bounds, incumbent=start)
        if result is not None:
            best, slot_sn = result
            for (dim, _), value in zip(dims, best, strict=True):
                if how[dim] is None:  # dimensions at their bound keep that (equal) proof
                    per[dim], how[dim] = value, SEARCH
    return Minimum(
        {d: per[alias[d]] for d in alias},
        {d: how[alias[d]] for d in alias},
        tuple(slot_sn) if slot_sn is not None else None,
    )


def _bounds(
    dims: Sequence[tuple[str, tuple[SlotSets, bool] | None]],
    have: Sequence[int | None] | None,
    capacities: Sequence[int],
    slots: int,
) -> tuple[list[int], dict[str, int | None], dict[str, str | None], bool]:
    """Per dimension in priority order: its lower bound (given the dimensions before it at
    theirs), and the minimum where the witness ``have`` reaches the bound with every dimension
    before at its minimum; whether every dimension was reached."""
    bounds: list[int] = []
    per: dict[str, int | None] = {}
    how: dict[str, str | None] = {}
    tights: list[SlotSets] = []  # tight dimensions the witness keeps at their minimum
    wholes: list[SlotSets] = []  # dimensions whose minimum is 0: every set whole
    reached = True
    for i, (dim, found) in enumerate(dims):
        bound = 0
        if found is not None:
            sets, regular = found
            bound = plain = lower_bound(sets, regular, capacities)
            # the bounds given earlier dimensions only matter where this one is not reached
            if regular and sets and (have is None or have[i] != plain):
                for earlier in tights:
                    bound = max(bound, after_bound(sets, earlier, capacities, slots))
                for earlier in wholes:
                    bound = max(bound, after_whole(sets, earlier, capacities, slots))
            # the witness at the plain bound, with every dimension before at its minimum:
            # then this is the minimum and every super node holds floor(c / m) sets whole
            at_plain = reached and have is not None and have[i] == plain == bound
            if at_plain and tight(sets, regular, capacities):
                tights.append(sets)
            if reached and have is not None and have[i] == bound == 0 and sets and regular:
                wholes.append(sets)
        bounds.append(bound)
        if found is not None and reached and have is not None and have[i] == bound:
            per[dim], how[dim] = bound, LOWER_BOUND
        else:
            reached = False
            per[dim], how[dim] = None, None
    return bounds, per, how, reached


def _regular_shapes(dims: Sequence[SlotSets]) -> tuple[list[tuple[int, int] | None], list[int]]:
    """Per dimension with disjoint sets of one size and weight (regular): (size, weight), and
    the number of its sets no slot of which is placed yet; at most sum(floor(room / size)) of
    those stay whole."""
    shape: list[tuple[int, int] | None] = []
    untouched: list[int] = []
    for sets in dims:
        flat = [x for m, _ in sets for x in m]
        one = len({len(m) for m, _ in sets}) == 1 and len({w for _, w in sets}) == 1
        shape.append((len(sets[0][0]), sets[0][1]) if one and len(set(flat)) == len(flat) else None)
        untouched.append(len(sets))
    return shape, untouched


def _hyperedges(
    dims: Sequence[SlotSets], slots: int
) -> tuple[list[int], list[int], list[int], list[list[int]]]:
    """Hyperedges: (dimension index, weight, unplaced slots) of each set; incident edges per
    slot."""
    edge_dim: list[int] = []
    edge_weight: list[int] = []
    unplaced: list[int] = []
    incident: list[list[int]] = [[] for _ in range(slots)]
    for d, sets in enumerate(dims):
        for members, weight in sets:
            e = len(edge_dim)
            edge_dim.append(d)
            edge_weight.append(weight)
            unplaced.append(len(members))
            for s in members:
                incident[s].append(e)
    return edge_dim, edge_weight, unplaced, incident


def _slot_order(dims: Sequence[SlotSets], slots: int) -> list[int]:
    """Slot order: the sets of the first dimensions together (components of their union,
    coarsest first), so sets close early and splitting them shows early."""
    parent = list(range(slots))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    keys: list[list[int]] = []
    for sets in dims:
        for members, _ in sets:
            a = find(members[0])
            for x in members[1:]:
                b = find(x)
                if a != b:
                    a, b = min(a, b), max(a, b)
                    parent[b] = a
        keys.append([find(x) for x in range(slots)])
    return sorted(range(slots), key=lambda x: (*(key[x] for key in reversed(keys)), x))


# The branch and bound's inner loop (rec, ahead) shares the search state as closures: it is the
# planner's hot path (perf/bench_plan.py), kept in one piece on purpose.
def search(  # noqa: C901, PLR0915
    dims: Sequence[SlotSets],
    capacities: Sequence[int],
    budget: int = SEARCH_BUDGET,
    *,
    bounds: Sequence[int] | None = None,
    incumbent: tuple[tuple[int, ...], list[int]] | None = None,
) -> tuple[tuple[int, ...], list[int]] | None:
    """Exact lexicographic minimum by branch and bound; None when it needs more than ``budget``.

    Slots are placed in order; a super node is tried only if it has room, and of the empty
    super nodes of one size only the first (they are interchangeable). A group is counted as
    crossing as soon as its slots sit in two super nodes, or its unplaced slots outnumber the
    room left in the one it started in. A partial assignment is dropped when those counts
    (raised to ``bounds``, which hold for every assignment) are lexicographically no better
    than the best complete one: completions only add crossings. ``incumbent`` (crossings,
    assignment), e.g. the packer's map, is the best to beat; it is returned when nothing beats
    it, so the result stays exact (the search proves it). Without one the first best found
    is returned (super nodes in site order first: physical order when that is optimal).
    """
    slots = sum(capacities)
    k = len(capacities)
    floor = list(bounds) if bounds is not None else [0] * len(dims)
    shape, untouched = _regular_shapes(dims)
    edge_dim, edge_weight, unplaced, incident = _hyperedges(dims, slots)
    order = _slot_order(dims, slots)
    home = [-1] * len(edge_dim)
    cut = [False] * len(edge_dim)
    room = list(capacities)
    assign = [-1] * slots
    forced = [0] * len(dims)
    best: list[tuple[int, ...] | None] = [incumbent[0] if incumbent else None]
    best_assign: list[list[int]] = [list(incumbent[1]) if incumbent else []]
    steps = [0]

    def ahead() -> bool:
        """Whether the groups split so far (at least their bounds) still beat the best."""
        if best[0] is None:
            return True
        low = []
        for d, f in enumerate(forced):
            if shape[d] is not None:
                size, weight = shape[d]  # type: ignore[misc]
                fit = sum(r // size for r in room)
                f += max(0, untouched[d] - fit) * weight
            low.append(max(f, floor[d]))
            if low[d] != best[0][d]:  # decided at this dimension
                return low[d] < best[0][d]
        return False

    def rec(i: int) -> bool:
        if i == slots:
            best[0] = tuple(forced)
            best_assign[0] = list(assign)
            return True
        s = order[i]
        tried_empty: set[int] = set()
        for b in range(k):
            if room[b] == 0:
                continue
            if room[b] == capacities[b]:  # empty: one per size
                if capacities[b] in tried_empty:
                    continue
                tried_empty.add(capacities[b])
            steps[0] += 1
            if steps[0] > budget:
                return False
            assign[s] = b
            room[b] -= 1
            left = room[b]
            changed: list[int] = []
            for e in incident[s]:
                unplaced[e] -= 1
                if cut[e]:
                    continue
                if home[e] < 0:
                    home[e] = b
                    untouched[edge_dim[e]] -= 1
                    changed.append(e)
                if home[e] != b or unplaced[e] > left:
                    cut[e] = True
                    forced[edge_dim[e]] += edge_weight[e]
                    changed.append(~e)
            # completions only split more groups: go on only while this one is still ahead
            if ahead() and not rec(i + 1):
                return False
            for e in reversed(changed):
                if e >= 0:
                    home[e] = -1
                    untouched[edge_dim[e]] += 1
                else:
                    cut[~e] = False
                    forced[edge_dim[~e]] -= edge_weight[~e]
            for e in incident[s]:
                unplaced[e] += 1
            room[b] += 1
            assign[s] = -1
        return True

    if not rec(0) or best[0] is None:
        return None
    return best[0], best_assign[0]
