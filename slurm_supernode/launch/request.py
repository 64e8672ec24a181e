"""Turn a JobSpec into an sbatch request for *whole* super nodes. Pure: nothing is submitted.

Strategies (``slurm.strategy`` of the site, ``auto`` picks from what the running Slurm has):

- ``features``: one node feature per super node. One super node is
  ``-N S --constraint=[sn0|sn1|...]`` (Slurm's "matching OR": every node carries the same one
  feature, so all S nodes come from one super node). k super nodes is a heterogeneous job of k
  such components, each ``--exclusive``: a component fills exactly one super node and no node
  is in two components, so the job gets k distinct whole super nodes. Exact on every version.
- ``block``: topology/block with one block per super node; ``-N k*S --segment=S`` (Slurm
  >= 24.05) keeps each segment of S nodes inside one block, i.e. one whole super node.
- ``switches``: topology/tree with a leaf switch per super node; ``--switches=k`` is best effort
  (Slurm gives up after max_switch_wait), so the job checks its allocation before starting.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from slurm_supernode.errors import InputError
from slurm_supernode.launch.imex_request import imex_network
from slurm_supernode.launch.jobspec import JobSpec, check_time
from slurm_supernode.site.model import STRATEGIES, Site, SuperNode
from slurm_supernode.site.rounding import round_up, size_classes

if TYPE_CHECKING:
    from slurm_supernode.slurm.container_runtimes import ContainerRuntimes


class ClusterFacts(NamedTuple):
    """What the running Slurm told us (gathered by the submit step; None fields = unknown)."""

    version: tuple[int, int, int] | None = None
    topology_plugin: str | None = None
    supports_segment: bool = False
    # blocks configured: topology/block, or a block topology in topology.yaml (25.05+, where
    # `scontrol show config` names another plugin)
    has_block: bool = False
    # Slurm's view of the nodes: hostname -> features; partition -> nodes
    node_features: dict[str, frozenset[str]] | None = None
    partition_nodes: dict[str, tuple[str, ...]] | None = None
    default_partition: str | None = None
    # `--requeue=expedite` is allowed (SlurmctldParameters=enable_expedited_requeue, 25.11+)
    expedited_requeue: bool = False
    # the container runtimes the cluster offers (read only for a job that asks for an image)
    container_runtimes: ContainerRuntimes | None = None
    # switch/nvidia_imex gives one IMEX channel per segment on request (25.11+)
    channel_per_segment: bool = False


@dataclass(frozen=True)
class SbatchRequest:
    """The materialised request: inspectable, testable, and what ``submit`` sends."""

    strategy: str
    nodes: int  # total nodes
    supernode_size: int  # nodes per super node of the chosen size class
    supernodes: int | None  # whole super nodes asked for; None when partial
    candidates: tuple[str, ...]  # super nodes the request may land on
    job_args: tuple[str, ...]  # job-wide options (first component)
    components: tuple[tuple[str, ...], ...]  # per-allocation options; more than one = het job
    notices: tuple[str, ...] = ()
    partition: str | None = None

    @property
    def heterogeneous(self) -> bool:
        return len(self.components) > 1

    def sbatch_args(self) -> list[str]:
        """Arguments for sbatch, components separated by ':' (script path not included)."""
        args = list(self.job_args) + list(self.components[0])
        for comp in self.components[1:]:
            args += [":", *comp]
        return args

    def as_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "nodes": self.nodes,
            "supernode_size": self.supernode_size,
            "supernodes": self.supernodes,
            "candidates": list(self.candidates),
            "heterogeneous": self.heterogeneous,
            "sbatch_args": self.sbatch_args(),
            "notices": list(self.notices),
            "partition": self.partition,
        }


class _Choice(NamedTuple):
    """The size class chosen and its super nodes."""

    size: int
    pool: list[SuperNode]


def block_ready(facts: ClusterFacts) -> bool:
    """Can whole super nodes be asked for as blocks (`--segment` on a block topology)?"""
    has_block = facts.has_block or (facts.topology_plugin or "").endswith("block")
    return facts.supports_segment and has_block


def _pin(nodelist: str, pool: list[SuperNode], size: int) -> str:
    """The option that puts a job of len(pool) * size nodes on exactly the pool's super nodes:
    their nodelist when the job takes every node, else (spare nodes held back: a nodelist
    longer than --nodes is refused, `invalid number of nodes (-N 18-16)`) a count per super
    node feature, `--constraint=[sn0*16&sn1*16]`."""
    if all(len(sn.nodes) == size for sn in pool):
        return f"--nodelist={nodelist}"
    if len(pool) == 1:
        return f"--constraint={pool[0].feature}"
    return "--constraint=[" + "&".join(f"{sn.feature}*{size}" for sn in pool) + "]"


def resolve_strategy(site: Site, facts: ClusterFacts | None) -> tuple[str, list[str]]:
    """The strategy to use; ``auto`` is decided from the running Slurm, never assumed."""
    wanted = site.slurm.strategy
    if wanted not in STRATEGIES:
        raise InputError(
            f"unknown request strategy {wanted!r}",
            where=f"{site.source or site.name}: slurm.strategy",
            hint="valid: " + ", ".join(STRATEGIES),
        )
    notices: list[str] = []
    if wanted == "block" and facts is not None and not block_ready(facts):
        notices.append(
            "site asks for strategy 'block' but this Slurm has no topology/block with --segment "
            "(needs >= 24.05); using 'features'"
        )
        return "features", notices
    if wanted != "auto":
        return wanted, notices
    if facts is None:
        notices.append("Slurm not reachable: planned with strategy 'features'")
        return "features", notices
    if block_ready(facts):
        return "block", notices
    if facts.node_features is not None:
        have = all(
            sn.feature in facts.node_features.get(n.hostname, frozenset())
            for sn in site.supernodes
            for n in sn.nodes
            if n.hostname in facts.node_features
        )
        if have and any(n in facts.node_features for n in site._by_host):
            return "features", notices
    if (facts.topology_plugin or "").endswith("tree"):
        notices.append("nodes carry no super node features: best-effort 'switches' strategy")
        return "switches", notices
    notices.append("no super node features and no topology plugin: using 'features'")
    return "features", notices


def _pool(site: Site, partition: str | None, facts: ClusterFacts | None) -> list[SuperNode]:
    """Super nodes that lie wholly inside the partition (all of the site's when unknown)."""
    if facts is None or facts.partition_nodes is None:
        return list(site.supernodes)
    part = partition or facts.default_partition
    if part is None:
        return list(site.supernodes)
    if part not in facts.partition_nodes:
        raise InputError(
            f"partition {part!r} does not exist",
            where="-p/--partition",
            hint="valid: " + ", ".join(sorted(facts.partition_nodes)),
        )
    members = set(facts.partition_nodes[part])
    return [sn for sn in site.supernodes if set(sn.hostnames) <= members]


def _size_class(pool: list[SuperNode], want: int, what: str, part: str | None) -> _Choice:
    """Pick the super node size: the most common size that has at least ``want`` of them."""
    if not pool:
        where = f"partition {part!r}" if part else "the site"
        raise InputError(f"{where} holds no whole super node", where="-p/--partition")
    by_size: dict[int, list[SuperNode]] = {}
    for sn in pool:
        by_size.setdefault(sn.job_size, []).append(sn)
    counts = Counter({s: len(v) for s, v in by_size.items()})
    fitting = [s for s, c in counts.most_common() if c >= want]
    if not fitting:
        where = f"partition {part!r}" if part else "the site"
        have = max(counts.values())
        names = ",".join(sn.name for sn in pool)
        raise InputError(
            f"{what} needs {want} whole super nodes but {where} has only {have} ({names})",
            where="-S/--supernodes" if what.startswith("-S") else "-N/--nodes",
            hint="ask for fewer nodes; the job could never start",
        )
    size = fitting[0]
    return _Choice(size=size, pool=by_size[size])


def _round_up(pool: list[SuperNode], nodes: int, part: str | None) -> tuple[_Choice, int]:
    """Size class and count of whole super nodes that hold ``nodes`` nodes: the one rule of
    ``site.rounding`` (the job_submit.lua plugin applies the same table)."""
    rounded = round_up(size_classes(sn.job_size for sn in pool), nodes, multi=True)
    if rounded is not None:
        members = [sn for sn in pool if sn.job_size == rounded.size]
        return _Choice(size=rounded.size, pool=members), rounded.k
    # Nothing fits: let _size_class produce the error with the numbers of the largest class.
    sizes = sorted({sn.job_size for sn in pool}, reverse=True)
    size = sizes[0] if sizes else 1
    _size_class(pool, math.ceil(nodes / size), f"-N {nodes}", part)
    raise AssertionError("unreachable")


def plan_request(
    spec: JobSpec,
    site: Site,
    facts: ClusterFacts | None = None,
    *,
    output: str | None = None,
    error: str | None = None,
) -> SbatchRequest:
    """Decide node count and Slurm options for whole super nodes. Raises InputError early for
    requests that can never run (instead of leaving them pending forever)."""
    check_time(spec.time)
    _check_counts(spec)
    strategy, notices = resolve_strategy(site, facts)
    partition = spec.partition or site.slurm.partition
    pool = _pool(site, partition, facts)
    aligned = site.slurm.small_jobs == "aligned"
    choice, k, partial = _choose_size(spec, pool, partition, notices, small_aligned=aligned)
    alloc = _alloc_options(spec, site, partition, choice)
    components, total, whole = _components(spec, strategy, choice, k, partial, alloc, notices)
    job = _job_options(spec, facts, output, error)
    offered = None if facts is None else (facts.channel_per_segment, facts.version)
    job += imex_network(site, offered, components, notices)
    # --sbatch passthrough goes last in every component, so it can override snrun's choices.
    components = [(*comp, *spec.sbatch_args) for comp in components]

    return SbatchRequest(
        strategy="partial" if partial else strategy,
        nodes=total,
        supernode_size=choice.size,
        supernodes=whole,
        candidates=tuple(sn.name for sn in choice.pool),
        job_args=tuple(job),
        components=tuple(components),
        notices=tuple(notices),
        partition=partition,
    )


def _check_counts(spec: JobSpec) -> None:
    """-S and -N: not both, each at least 1."""
    if spec.supernodes is not None and spec.nodes is not None:
        raise InputError(
            "give either -S/--supernodes or -N/--nodes, not both",
            where="-S/-N",
            hint="-S counts whole super nodes, -N nodes (rounded up to whole super nodes)",
        )
    for opt, val in (("-S/--supernodes", spec.supernodes), ("-N/--nodes", spec.nodes)):
        if val is not None and val < 1:
            raise InputError(f"must be at least 1, got {val}", where=opt)


def _choose_size(
    spec: JobSpec,
    pool: list[SuperNode],
    partition: str | None,
    notices: list[str],
    *,
    small_aligned: bool = False,
) -> tuple[_Choice, int, bool]:
    """(size class, whole super nodes, partial): -N rounded up to whole super nodes unless
    --allow-partial, -S as given. ``small_aligned`` (site ``slurm.small_jobs: aligned``, the
    plugin's rule for plain sbatch): -N that fits in one super node keeps its count there."""
    if spec.nodes is None:
        k = spec.supernodes or 1
        return _size_class(pool, k, f"-S {k}", partition), k, False
    keep = spec.allow_partial or small_aligned
    if keep and pool and spec.nodes <= max(sn.job_size for sn in pool):
        fits = [sn for sn in pool if sn.job_size >= spec.nodes]
        return _Choice(size=max(sn.job_size for sn in fits), pool=fits), 0, True
    # Round up to whole super nodes: the largest size class that has enough of them.
    choice, k = _round_up(pool, spec.nodes, partition)
    partial = False
    if spec.allow_partial:
        partial = spec.nodes != k * choice.size
    elif spec.nodes != k * choice.size:
        notices.append(
            f"rounded -N {spec.nodes} up to {k * choice.size} nodes "
            f"({k} whole super node{'s' if k > 1 else ''} of {choice.size}); "
            "--allow-partial keeps the exact count"
        )
    return choice, k, partial


def _alloc_options(spec: JobSpec, site: Site, partition: str | None, choice: _Choice) -> list[str]:
    """The options every component's allocation carries."""
    alloc: list[str] = []
    if partition:
        alloc.append(f"--partition={partition}")
    if spec.exclusive:
        alloc.append("--exclusive")
    if spec.time:
        alloc.append(f"--time={spec.time}")
    if spec.qos:
        alloc.append(f"--qos={spec.qos}")
    if spec.account:
        alloc.append(f"--account={spec.account}")
    alloc.append("--ntasks-per-node=1")
    if site.slurm.gres_name:
        per_node = min(n.devices for sn in choice.pool for n in sn.nodes)
        alloc.append(f"--gres={site.slurm.gres_name}:{per_node}")
    return alloc


def _components(
    spec: JobSpec,
    strategy: str,
    choice: _Choice,
    k: int,
    partial: bool,
    alloc: list[str],
    notices: list[str],
) -> tuple[list[tuple[str, ...]], int, int | None]:
    """(sbatch components, total nodes, whole super nodes or None) for the strategy."""
    size = choice.size
    feats = "|".join(sn.feature for sn in choice.pool)
    if partial:
        n = spec.nodes or 1
        if n <= size:
            # Still inside one super node: the matching-OR constraint keeps it there.
            notices.append(f"partial super node: {n} of {size} nodes, inside one super node")
            return [(f"--nodes={n}", f"--constraint=[{feats}]", *alloc)], n, None
        k = math.ceil(n / size)
        notices.append(f"partial: {n} nodes over at most {k} super nodes (best effort)")
        return [(f"--nodes={n}", f"--switches={k}", *alloc)], n, None
    if strategy == "features":
        comp = (f"--nodes={size}", f"--constraint=[{feats}]", *alloc)
        return [comp] * k, k * size, k
    if spec.pinned_nodes:
        # block/switches on named super nodes: no --segment/--switches (24.11 refuses
        # --segment with a nodelist across blocks); the pin itself is exact.
        pin = _pin(spec.pinned_nodes, choice.pool, size)
        return [(f"--nodes={k * size}", pin, *alloc)], k * size, k
    if strategy == "block":
        # --exclusive=topo (with --segment since 24.05): no other job in the job's blocks, so a
        # super node's spare nodes stay free for this job's requeue (measured on 24.11: a job
        # on the 4th node of a 3-node job's block pends with =topo, runs with --exclusive).
        block_alloc = ["--exclusive=topo" if a == "--exclusive" else a for a in alloc]
        return [(f"--nodes={k * size}", f"--segment={size}", *block_alloc)], k * size, k
    # switches
    notices.append("strategy 'switches' is best effort: the job verifies its allocation")
    return [(f"--nodes={k * size}", f"--switches={k}", *alloc)], k * size, k


def _job_options(
    spec: JobSpec, facts: ClusterFacts | None, output: str | None, error: str | None
) -> list[str]:
    """The job's own options (name, output, requeue, signal, mail...), once per job."""
    job: list[str] = [f"--job-name={spec.name}"]
    out = spec.output or output
    err = spec.error or error
    if out:
        job.append(f"--output={out}")
    if err:
        job.append(f"--error={err}")
    # expedite: a requeued job (by the supervisor or by Slurm after a node failure) may start
    # again at once and first in line, instead of after cred_expire (120 s by default)
    requeue = "--requeue=expedite" if facts is not None and facts.expedited_requeue else "--requeue"
    job += ["--open-mode=append", requeue, "--signal=B:USR2@90"]
    if spec.workdir:
        job.append(f"--chdir={spec.workdir}")
    if spec.dependency:
        job.append(f"--dependency={spec.dependency}")
    if spec.mail_type:
        job.append(f"--mail-type={spec.mail_type}")
    if spec.mail_user:
        job.append(f"--mail-user={spec.mail_user}")
    return job


def whole_supernode_problems(site: Site, hosts: list[str]) -> list[str]:
    """Super nodes the allocation touches but does not hold whole (empty list: all whole).
    "Whole" means all nodes but the super node's spares."""
    touched: dict[str, set[str]] = {}
    unknown = []
    for h in hosts:
        if not site.has_node(h):
            unknown.append(h)
            continue
        touched.setdefault(site.node(h).supernode, set()).add(h)
    problems = [f"node {h} is not in site {site.name}" for h in unknown]
    for name, got in touched.items():
        sn = site.supernode(name)
        if len(got) < sn.job_size:
            missing = [h for h in sn.hostnames if h not in got]
            spare = f", {sn.spares} spare" if sn.spares else ""
            problems.append(
                f"super node {name}: {len(got)} of {sn.job_size} nodes allocated{spare} "
                f"(missing {','.join(missing)})"
            )
    return problems
