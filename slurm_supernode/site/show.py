"""A readable overview of a site: super nodes, racks, nodes, node specs, links, env profiles.

``render_text`` gives plain indented text (pipes, logs, tests); ``print_site`` uses rich's tree
and table on a terminal and falls back to the plain text otherwise. Rich is imported lazily.
"""

from __future__ import annotations

import sys
from itertools import groupby
from typing import TextIO

from slurm_supernode.hostlist import fold, fold_ordered
from slurm_supernode.site.model import NodeSpec, Site, SuperNode


def _ranges(ids: tuple[int, ...]) -> str:
    """(0,1,2,3,6) -> '0-3,6'."""
    runs: list[list[int]] = []  # [first, last] of each run of consecutive ids
    for d in ids:
        if runs and d == runs[-1][1] + 1:
            runs[-1][1] = d
        else:
            runs.append([d, d])
    return ",".join(f"{start}-{last}" if last != start else f"{start}" for start, last in runs)


def spec_summary(spec: NodeSpec, gres_name: str) -> str:
    parts = [f"{spec.devices} devices"]
    parts.append("groups " + " ".join(f"[{_ranges(g)}]" for g in spec.device_groups))
    gres = gres_name + (f":{spec.gres_type}" if spec.gres_type else "")
    parts.append(f"gres {gres}" + (f" {spec.gres_file}" if spec.gres_file else ""))
    if spec.cpus:
        parts.append(f"{spec.cpus} cpus")
    if spec.memory_mb:
        parts.append(f"{spec.memory_mb} MB")
    if spec.device_memory_gb:
        parts.append(f"{spec.device_memory_gb:g} GB/device")
    if spec.nics.socket_ifname:
        parts.append(f"if {spec.nics.socket_ifname}")
    if spec.nics.hcas:
        parts.append("hcas " + ",".join(spec.nics.hcas))
    return ", ".join(parts)


def slurm_summary(site: Site) -> str:
    """The ``slurm:`` settings on one line: everything that changes what a job is given."""
    s = site.slurm
    enforced = ",".join(s.supernode_partitions) or "none"
    return (
        f"partition {s.partition or '-'}, strategy {s.strategy}, feature {s.feature_format},"
        f" spine {s.spine_switch}, gres {s.gres_name}, whole super nodes enforced in {enforced},"
        f" small jobs {s.small_jobs}"
    )


def _spec_ids(site: Site) -> dict[int, str]:
    """Short labels (A, B, ...) for the distinct node specs, in order of first use."""
    labels: dict[int, str] = {}
    for node in site.nodes:
        if id(node.spec) not in labels:
            n = len(labels)
            labels[id(node.spec)] = chr(ord("A") + n) if n < 26 else f"S{n}"
    return labels


def _sn_lines(site: Site, sn: SuperNode, labels: dict[int, str]) -> list[tuple[int, str]]:
    """(depth, text) lines for one super node."""
    head = f"{sn.name}: {len(sn.nodes)} nodes, {sn.devices} devices, feature {sn.feature}"
    if sn.spares:
        head += f", {sn.spares} spares (jobs take {sn.job_size})"
    if sn.super_pod_id is not None:
        head += f", super_pod_id {sn.super_pod_id}"
    lines = [(1, head)]
    for rack, nodes in groupby(sn.nodes, key=lambda n: n.rack):
        group = list(nodes)
        indent = 2
        if rack is not None:
            lines.append((2, f"rack {rack}"))
            indent = 3
        for spec_id, run in groupby(group, key=lambda n: id(n.spec)):
            hosts = [n.hostname for n in run]
            lines.append((indent, f"nodes {fold_ordered(hosts)} (spec {labels[spec_id]})"))
    return lines


def render_text(site: Site) -> str:
    """The overview as plain indented text."""
    labels = _spec_ids(site)
    s = site.slurm
    out = [
        f"site {site.name} ({site.vendor}): {len(site.supernodes)} super nodes,"
        f" {len(site.nodes)} nodes, {site.devices} devices",
    ]
    if site.source:
        out.append(f"  file: {site.source}")
    out.append(f"  slurm: {slurm_summary(site)}")
    out.append("super nodes")
    for sn in site.supernodes:
        out += ["  " * d + text for d, text in _sn_lines(site, sn, labels)]
    out.append("node specs")
    seen: set[int] = set()
    for node in site.nodes:
        if id(node.spec) not in seen:
            seen.add(id(node.spec))
            out.append(f"  {labels[id(node.spec)]}: {spec_summary(node.spec, s.gres_name)}")
    out.append("links (per device, one direction)")
    out.append(f"  {'level':<10} {'GB/s':>8} {'latency us':>11}  kind")
    for level, link in site.links.items():
        out.append(f"  {level:<10} {link.bandwidth_GBps:>8g} {link.latency_us:>11g}  {link.kind}")
    if site.env_profiles:
        out.append("env profiles")
        for name, prof in site.env_profiles.items():
            out.append(f"  {name}: " + " ".join(f"{k}={v}" for k, v in prof.vars))
    ips = [n for n in site.nodes if n.device_ips]
    if ips:
        first = ips[0]
        out.append(
            f"device IPs: {len(ips)} nodes, e.g. {first.hostname}: {first.device_ips[0]}"
            f" .. {first.device_ips[-1]}" + (f", host {first.host_ip}" if first.host_ip else "")
        )
    out.append(f"all nodes: {fold(n.hostname for n in site.nodes)}")
    return "\n".join(out) + "\n"


def print_site(site: Site, stream: TextIO | None = None) -> None:
    """Print the overview: a rich tree and table on a terminal, plain text otherwise."""
    stream = stream or sys.stdout
    if not stream.isatty():
        stream.write(render_text(site))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    from rich.tree import Tree

    console = Console(file=stream)
    labels = _spec_ids(site)
    tree = Tree(
        f"[bold]{escape(site.name)}[/] ({site.vendor}): {len(site.supernodes)} super nodes,"
        f" {len(site.nodes)} nodes, {site.devices} devices"
    )
    for sn in site.supernodes:
        stack = [tree]
        for depth, text in _sn_lines(site, sn, labels):
            del stack[depth:]
            stack.append(stack[-1].add(escape(text), highlight=False))
    console.print(tree)
    console.print(escape(f"slurm: {slurm_summary(site)}"), highlight=False)
    specs = Table(title="node specs")
    specs.add_column("spec")
    specs.add_column("hardware")
    seen: set[int] = set()
    for node in site.nodes:
        if id(node.spec) not in seen:
            seen.add(id(node.spec))
            specs.add_row(
                labels[id(node.spec)], escape(spec_summary(node.spec, site.slurm.gres_name))
            )
    console.print(specs)
    links = Table(title="links (per device, one direction)")
    for col in ("level", "GB/s", "latency us", "kind"):
        links.add_column(col)
    for level, link in site.links.items():
        links.add_row(level, f"{link.bandwidth_GBps:g}", f"{link.latency_us:g}", escape(link.kind))
    console.print(links)
    for name, prof in site.env_profiles.items():
        line = f"env {name}: " + " ".join(f"{k}={v}" for k, v in prof.vars)
        console.print(escape(line), highlight=False)
