"""Cross-object rules of a site config, each reported at its ``file:line:col``.

The loader checks shapes and types while it builds the model; this module checks what only
makes sense on the whole model: a host in two super nodes, empty super nodes, device groups,
super node sizes the request strategy cannot express (Slurm's topology/block rules), feature
and switch names, device IPs, link figures. Every rule appends to one problem list so the user
sees all of them at once.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from dataclasses import dataclass, field

from slurm_supernode.errors import Problem
from slurm_supernode.site.model import Site

# Slurm refuses switch names longer than this (topology.conf(5)).
MAX_SWITCH_NAME = 64
# topology/block: BlockSizes levels are base * 2**k with k <= 15 (block_record.c).
MAX_BLOCK_LEVEL = 15
# Characters Slurm's --constraint syntax gives meaning to; a feature name must avoid them.
_FEATURE_SPECIALS = set("&|[]*,:()!{}<>=\"' \t")
# Characters that end or split a value in slurm.conf / gres.conf / topology.conf lines
# (``Key=value Key=value``, ``#`` starts a comment, quotes and ``\`` are Slurm's quoting).
_SLURM_SPECIALS = set(" \t=#\"'\\")

Loc = tuple[int, int]  # 1-based (line, col)


@dataclass(eq=False, repr=False)  # a working record of one load: never compared or shown
class SourceMap:
    """Where things of the built model came from in the file (filled by the loader)."""

    file: str
    root: Loc = (1, 1)
    sn_name: dict[int, Loc] = field(default_factory=dict)  # super node ordinal -> name
    sn_nodes: dict[int, Loc] = field(default_factory=dict)  # ordinal -> nodes:/racks: value
    sn_feature: dict[int, Loc] = field(default_factory=dict)
    sn_pod: dict[int, Loc] = field(default_factory=dict)  # ordinal -> super_pod_id value
    # per super node ordinal: the Loc of the hostlist each node came from (parallel to nodes)
    node_src: dict[int, list[Loc]] = field(default_factory=dict)
    device_ip_src: dict[str, Loc] = field(default_factory=dict)  # hostname -> pattern/list
    host_ip_src: dict[str, Loc] = field(default_factory=dict)
    links: dict[tuple[str, str], Loc] = field(default_factory=dict)  # (level, key) -> Loc
    slurm: dict[str, Loc] = field(default_factory=dict)  # key -> Loc of its value
    # super nodes whose hostlist did not parse (already reported: not "empty" again)
    sn_broken: set[int] = field(default_factory=set)
    sn_unnamed: set[int] = field(default_factory=set)  # missing name (reported)


def _p(src: SourceMap, loc: Loc | None, message: str, hint: str | None = None) -> Problem:
    line, col = loc or src.root
    return Problem(src.file, line, col, message, hint or "see docs/site-config.md")


def check_device_groups(devices: int, groups: tuple[tuple[int, ...], ...]) -> list[str]:
    """Messages for device groups that do not partition 0..devices-1 (empty: fine)."""
    problems: list[str] = []
    seen: dict[int, int] = {}
    for gi, group in enumerate(groups):
        if not group:
            problems.append(f"device group {gi} is empty")
        for d in group:
            if d < 0 or d >= devices:
                problems.append(
                    f"device {d} in device group {gi} is out of range 0-{devices - 1}"
                    f" ({devices} devices per node)"
                )
            elif d in seen:
                problems.append(f"device {d} is in device groups {seen[d]} and {gi} (overlap)")
            else:
                seen[d] = gi
    missing = [d for d in range(devices) if d not in seen]
    if missing and not problems:  # after an out-of-range id or an overlap, that is the typo
        shown = ",".join(map(str, missing[:8])) + (",..." if len(missing) > 8 else "")
        problems.append(f"device groups do not cover device(s) {shown} of 0-{devices - 1}")
    return problems


def slurm_value_problem(value: str, also: str = "") -> str | None:
    """Why ``value`` cannot be written as one value of a Slurm config line, or None.

    Every value snrun exports (names, hosts, files, node options) goes through this: a newline,
    a space, ``=`` or ``#`` would end the value and start another attribute, line or comment.
    ``also`` adds characters the particular place gives a meaning to (',' in lists, ':' in Gres=).
    """
    if not value:
        return "is empty"
    for i, ch in enumerate(value):
        if not (ch.isascii() and ch.isprintable()) or ch in _SLURM_SPECIALS or ch in also:
            return f"contains {ch!r} at position {i + 1}, which a Slurm config value cannot hold"
    return None


def feature_name_problem(feature: str) -> str | None:
    """Why a Slurm node feature name is unusable in --constraint, or None."""
    if not feature:
        return "empty feature name"
    why = slurm_value_problem(feature)
    if why:
        return f"feature name {feature!r} {why}"
    bad = sorted(set(feature) & _FEATURE_SPECIALS)
    if bad:
        return f"feature name {feature!r} contains {bad[0]!r}, which --constraint treats as syntax"
    if not feature[0].isalnum() and feature[0] != "_":
        return f"feature name {feature!r} must start with a letter, digit or '_'"
    return None


def block_sizes(site: Site) -> list[int]:
    """BlockSizes for topology/block: base = smallest super node, then doublings that fit.

    Slurm (block_record.c): the first size is the base block node count, each later one is base
    times a power of two (level <= 15), and no block may have fewer nodes than the base.
    """
    sizes = [len(sn.nodes) for sn in site.supernodes if sn.nodes]
    if not sizes:
        return []
    base = min(sizes)
    out = [base]
    level = 1
    while (1 << level) <= len(sizes) and level <= MAX_BLOCK_LEVEL:
        out.append(base << level)
        level += 1
    return out


def validate_site(site: Site, src: SourceMap) -> list[Problem]:
    """All cross-object problems of ``site``; the loader has checked shapes and types."""
    problems: list[Problem] = []
    problems += _check_hosts(site, src)
    problems += _check_names(site, src)
    problems += _check_strategy(site, src)
    problems += _check_ips(site, src)
    problems += _check_ascend(site, src)
    return problems


def _check_hosts(site: Site, src: SourceMap) -> list[Problem]:
    out: list[Problem] = []
    seen: dict[str, str] = {}  # host -> super node name
    for i, sn in enumerate(site.supernodes):
        if not sn.nodes:
            if i not in src.sn_broken:
                out.append(
                    _p(
                        src,
                        src.sn_nodes.get(i),
                        f"super node {sn.name!r} has no nodes",
                        "list its nodes, e.g. nodes: gb[001-018]",
                    )
                )
            continue
        locs = src.node_src.get(i, [])
        for j, node in enumerate(sn.nodes):
            host = node.hostname
            first = seen.get(host)
            if first is None:
                seen[host] = sn.name
                continue
            loc = locs[j] if j < len(locs) else src.sn_nodes.get(i)
            if first == sn.name:
                out.append(
                    _p(
                        src,
                        loc,
                        f"host {host} appears twice in super node {sn.name!r}",
                        "list every host once",
                    )
                )
            else:
                out.append(
                    _p(
                        src,
                        loc,
                        f"host {host} is in super nodes {first!r} and {sn.name!r}",
                        "a host belongs to exactly one super node",
                    )
                )
    return out


def _check_names(site: Site, src: SourceMap) -> list[Problem]:
    out: list[Problem] = []
    names: dict[str, int] = {}
    features: dict[str, str] = {}
    bad_feature_at: set[Loc | None] = set()  # one report per feature_format, not per super node
    for i, sn in enumerate(site.supernodes):
        if sn.name in names:
            out.append(
                _p(
                    src,
                    src.sn_name.get(i),
                    f"duplicate super node name {sn.name!r}",
                    "super node names must be unique",
                )
            )
        names.setdefault(sn.name, i)
        if i in src.sn_unnamed:
            continue
        bad_name = slurm_value_problem(sn.name, ",")
        if bad_name:
            out.append(
                _p(
                    src,
                    src.sn_name.get(i),
                    f"super node name {sn.name!r} {bad_name}",
                    "it becomes SwitchName=/BlockName= in topology.conf: letters, digits,"
                    " '-', '_', '.'",
                )
            )
            continue
        loc = src.sn_feature.get(i) or src.slurm.get("feature_format") or src.sn_name.get(i)
        why = feature_name_problem(sn.feature)
        if why and loc in bad_feature_at:
            pass
        elif why:
            bad_feature_at.add(loc)
            out.append(
                _p(src, loc, why, "use letters, digits, '_', '-' or '.' (slurm.feature_format)")
            )
        elif sn.feature in features and features[sn.feature] != sn.name:
            out.append(
                _p(
                    src,
                    loc,
                    f"super nodes {features[sn.feature]!r} and {sn.name!r} share feature"
                    f" {sn.feature!r}",
                    "each super node needs its own feature: put {name} in slurm.feature_format",
                )
            )
        features.setdefault(sn.feature, sn.name)
        if sn.super_pod_id is not None and site.vendor != "ascend":
            out.append(
                _p(
                    src,
                    src.sn_pod.get(i) or src.sn_name.get(i),
                    "super_pod_id is only used with vendor: ascend",
                    "remove it or set vendor: ascend",
                )
            )
    return out


def _check_ascend(site: Site, src: SourceMap) -> list[Problem]:
    """What HCCL's rank table parser would refuse and the site alone decides: SuperPoD ids
    (explicit ones and the file-position default of the others) unique, server ids (host IP,
    else hostname) at most 64 characters."""
    if site.vendor != "ascend":
        return []
    out: list[Problem] = []
    explicit = any(sn.super_pod_id is not None for sn in site.supernodes)
    owner: dict[int, tuple[str, bool]] = {}  # pod id -> (super node, explicit?)
    for i, sn in enumerate(site.supernodes):
        pod = sn.super_pod_id if sn.super_pod_id is not None else i
        given = sn.super_pod_id is not None
        first = owner.get(pod)
        if first is not None and explicit:
            name, first_given = first
            how = "" if first_given and given else " (a super node without super_pod_id gets"
            how += "" if first_given and given else " its position in the file, 0-based)"
            out.append(
                _p(
                    src,
                    src.sn_pod.get(i) or src.sn_name.get(i),
                    f"super_pod_id {pod} of {sn.name!r} is also the id of {name!r}{how}:"
                    " HCCL would merge two SuperPoDs",
                    "give every super node a distinct super_pod_id (or none at all)",
                )
            )
        owner.setdefault(pod, (sn.name, given))
    for i, sn in enumerate(site.supernodes):
        locs = src.node_src.get(i, [])
        for j, node in enumerate(sn.nodes):
            server_id = node.host_ip or node.hostname
            if len(server_id) > 64:
                loc = src.host_ip_src.get(node.hostname) if node.host_ip else None
                out.append(
                    _p(
                        src,
                        loc or (locs[j] if j < len(locs) else src.sn_nodes.get(i)),
                        f"{node.hostname}: rank table server_id {server_id[:20]}... is"
                        f" {len(server_id)} characters; HCCL allows 64",
                        "set a host_ip for it, or use a shorter hostname",
                    )
                )
    return out


def _check_strategy(site: Site, src: SourceMap) -> list[Problem]:
    out: list[Problem] = []
    strategy = site.slurm.strategy
    sizes = Counter(len(sn.nodes) for sn in site.supernodes if sn.nodes)
    if strategy == "block" and len(sizes) > 1:
        common, _ = sizes.most_common(1)[0]
        for i, sn in enumerate(site.supernodes):
            if sn.nodes and len(sn.nodes) != common:
                out.append(
                    _p(
                        src,
                        src.sn_nodes.get(i),
                        f"strategy block needs equal super nodes: {sn.name!r} has"
                        f" {len(sn.nodes)} nodes, most have {common}",
                        "topology/block blocks have one base size (BlockSizes); use strategy"
                        " features or switches for mixed sizes",
                    )
                )
    if strategy in ("switches", "auto"):
        spine = site.slurm.spine_switch
        for i, sn in enumerate(site.supernodes):
            if len(sn.name) > MAX_SWITCH_NAME:
                out.append(
                    _p(
                        src,
                        src.sn_name.get(i),
                        f"super node name is {len(sn.name)} characters; Slurm switch names"
                        f" allow {MAX_SWITCH_NAME}",
                        "shorten the name",
                    )
                )
            if sn.name == spine:
                out.append(
                    _p(
                        src,
                        src.sn_name.get(i),
                        f"super node {sn.name!r} has the name of the spine switch",
                        "rename it or set slurm.spine_switch",
                    )
                )
    return out


def _check_ips(site: Site, src: SourceMap) -> list[Problem]:
    out: list[Problem] = []
    seen: dict[str, str] = {}
    reported: set[Loc] = set()
    for node in site.nodes:
        if node.device_ips:
            loc = src.device_ip_src.get(node.hostname)
            if len(node.device_ips) != node.devices:
                out.append(
                    _p(
                        src,
                        loc,
                        f"{node.hostname} has {len(node.device_ips)} device IPs for"
                        f" {node.devices} devices",
                        "give one IP per device, in device order",
                    )
                )
            for dev, ip in enumerate(node.device_ips):
                what = f"{node.hostname} device {dev}"
                out += _one_ip(src, loc, ip, what, seen, reported)
        if node.host_ip is not None:
            out += _one_ip(
                src,
                src.host_ip_src.get(node.hostname),
                node.host_ip,
                f"{node.hostname} host_ip",
                seen,
                reported,
            )
    return out


def _one_ip(
    src: SourceMap, loc: Loc | None, ip: str, what: str, seen: dict[str, str], reported: set
) -> list[Problem]:
    try:
        ipaddress.ip_address(ip)
    except ValueError:
        key = (loc, "bad")
        if key in reported:  # one report per pattern, not one per device
            return []
        reported.add(key)
        return [
            _p(
                src,
                loc,
                f"malformed IP {ip!r} for {what}",
                "pattern fields: {sn} {pod} {node} {gnode} {slot} {dev}, each may add +N;"
                " every octet 0-255",
            )
        ]
    first = seen.get(ip)
    if first is not None:
        key = (loc, "dup")
        if key in reported:
            return []
        reported.add(key)
        return [
            _p(
                src,
                loc,
                f"IP {ip} of {what} is already used by {first}",
                "device and host IPs must be unique",
            )
        ]
    seen[ip] = what
    return []
