"""Device and host IP addresses of a site: a pattern such as ``10.{pod}.{node}.{dev}``
(``render_pattern``) and/or explicit values per node (``IpSource``)."""

from __future__ import annotations

import string
from dataclasses import dataclass

import yaml

from slurm_supernode.site.validate import Loc
from slurm_supernode.site.yaml_reader import NodeReader

IP_KEYS = ("pattern", "nodes")
# Fields of device/host IP patterns; each may carry "+N" ({node+1}).
IP_FIELDS = ("sn", "pod", "node", "gnode", "dev", "slot")


@dataclass
class IpSource:
    """device_ips / host_ip of the site or of one super node: a pattern and explicit values."""

    node: yaml.Node
    devices: bool
    pattern: str | None
    pattern_loc: Loc | None
    explicit: dict[str, tuple[tuple[str, ...], Loc]]

    @classmethod
    def parse(cls, b: NodeReader, item: tuple | None, what: str, devices: bool) -> IpSource | None:
        if item is None:
            return None
        node = item[1]
        before = len(b.problems)
        pattern = None
        pattern_node: yaml.Node | None = None
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
                        ips = b.names(vnode, f"{what}.nodes.{host}", "an IP address", "addresses")
                    else:
                        one = b.name(vnode, f"{what}.nodes.{host}", "an IP address")
                        ips = (one,) if one is not None else None
                    if ips is not None:
                        explicit[host] = (ips, b.loc(vnode))
        if pattern_node is not None:
            text = b.name(pattern_node, f"{what} pattern", "an IP pattern")
            fields = IP_FIELDS if devices else tuple(f for f in IP_FIELDS if f != "dev")
            if text is not None and check_pattern(b, pattern_node, text, fields):
                pattern = text
        if pattern is None and not explicit:
            reported = len(b.problems) > before  # a bad value there: no follow-up
            if not reported and not isinstance(node, yaml.ScalarNode):
                b.err(
                    node,
                    f"{what} needs a pattern or nodes",
                    'e.g. pattern: "10.{pod}.{node}.{dev}"',
                )
            return None
        loc = b.loc(pattern_node) if pattern_node is not None else None
        return cls(node, devices, pattern, loc, explicit)


def check_pattern(b: NodeReader, node: yaml.Node, text: str, fields: tuple[str, ...]) -> bool:
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
