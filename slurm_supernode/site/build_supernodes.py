"""Builders of the node sections of a site config: ``node_defaults``, ``supernodes`` (with
their node specs, overrides and IPs), merged once per distinct layer combination, so a
100k-device site loads fast."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import yaml

from slurm_supernode.site.limits import (
    MAX_CPUS,
    MAX_DEVICES_PER_NODE,
    MAX_MEMORY_MB,
    MAX_SITE_DEVICES,
)
from slurm_supernode.site.model import NicSpec, Node, NodeSpec, SlurmSettings, SuperNode
from slurm_supernode.site.validate import Loc, check_device_groups
from slurm_supernode.site.yaml_reader import NodeReader

if TYPE_CHECKING:
    from slurm_supernode.site.ip_patterns import IpSource

SPEC_KEYS = (
    "devices",
    "device_groups",
    "nics",
    "gres_type",
    "gres_file",
    "cpus",
    "memory_mb",
    "device_memory_gb",
)
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


class _Val(NamedTuple):
    """A parsed spec value with where it came from and how specific its layer is."""

    value: Any
    loc: Loc
    rank: int


class SupernodeBuilder(NodeReader):
    """Node specs (defaults, super nodes, overrides merged per layer), super nodes and their
    device/host IPs."""

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
            elif key == "device_memory_gb":  # what `snrun plan` checks a layout's state against
                value = self.number(vnode, label, above=0, hint="memory of one device, GB")
                if value is not None and value > MAX_MEMORY_MB:
                    self.err(vnode, f"{label} must be <= {MAX_MEMORY_MB}, got {value:g}")
                    value = None
            elif key == "gres_type":  # Gres=gpu:TYPE:N and gres.conf Type=
                value = self.slurm_value(vnode, label, ",:")
            elif key == "gres_file":  # gres.conf File=/dev/nvidia[0-7]
                value = self.slurm_value(vnode, label, noun="a device path")
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
            self.name(m["socket_ifname"][1], f"{what}.socket_ifname", "an interface name")
            if ("socket_ifname" in m)
            else None
        )
        hcas = self.names(m["hcas"][1], f"{what}.hcas") if "hcas" in m else ()
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
        overrides, applies = self._overrides(top, all_hosts)
        ips = self._ip_source(top.get("device_ips"), "device_ips", devices=True)
        hips = self._ip_source(top.get("host_ip"), "host_ip", devices=False)
        for src in (ips, hips):
            if src:
                self._known(list(src.explicit), all_hosts, src.node)
        spec_of = self._spec_lookup(defaults, overrides)
        if not self._devices_within_bound(raw, applies, spec_of):
            return None
        out: list[SuperNode] = []
        gnode = 0
        for i, r in enumerate(raw):
            nodes = self._nodes(
                i, r, applies, spec_of, (r["device_ips"], ips), (r["host_ip"], hips), gnode
            )
            gnode += len(nodes)
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

    def _overrides(
        self, top: dict, all_hosts: set[str]
    ) -> tuple[list[dict[str, _Val]], dict[str, list[int]]]:
        """node_overrides: their spec layers, and hostname -> indices of the overrides that
        apply, in file order."""
        overrides: list[dict[str, _Val]] = []
        applies: dict[str, list[int]] = {}
        if "node_overrides" not in top:
            return overrides, applies
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
        return overrides, applies

    def _spec_lookup(
        self, defaults: dict[str, _Val], overrides: list[dict[str, _Val]]
    ) -> Callable[[int, dict[str, Any], tuple[int, ...]], NodeSpec]:
        """``spec_of(i, raw super node, overrides)``: the merged spec of a host with these
        overrides, built once per layer combination."""
        spec_cache: dict[tuple, NodeSpec] = {}

        def spec_of(i: int, r: dict[str, Any], over: tuple[int, ...]) -> NodeSpec:
            key = (i if r["layer"] else -1, over)
            spec = spec_cache.get(key)
            if spec is None:
                layers = [defaults, r["layer"], *(overrides[k] for k in over)]
                spec = self._merge_spec(layers, r["name_loc"], r["name"])
                spec_cache[key] = spec
            return spec

        return spec_of

    def _devices_within_bound(
        self, raw: list[dict[str, Any]], applies: dict[str, list[int]], spec_of: Callable
    ) -> bool:
        """The device bound, checked before any node is built: a typo fails at once."""
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
                return False
        return True

    def _nodes(
        self,
        i: int,
        r: dict[str, Any],
        applies: dict[str, list[int]],
        spec_of: Callable,
        ip_sources: tuple,
        hip_sources: tuple,
        gnode: int,
    ) -> list[Node]:
        """The nodes of super node ``i`` (``gnode``: the site-wide index of its first node),
        each with its merged spec and its IPs."""
        nodes: list[Node] = []
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
                    "gnode": gnode + idx,
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
        return nodes

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
            name = self.name(m["name"][1], f"{what}.name")
            if name is not None:
                r["name"] = name
                what = f"super node {name!r}"
            else:
                self.src.sn_unnamed.add(i)
            r["name_loc"] = self.loc(m["name"][1])
        else:
            self.src.sn_unnamed.add(i)
        self.src.sn_name[i] = r["name_loc"]
        r["hosts"] = self._supernode_hosts(item, m, i, what)
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
            r["feature"] = self.name(m["feature"][1], f"{what}.feature", "a feature name")
            self.src.sn_feature[i] = self.loc(m["feature"][1])
        if "node_defaults" in m:
            r["layer"] = self._spec_layer(m["node_defaults"][1], f"{what}.node_defaults", 1)
        r["device_ips"] = self._ip_source(m.get("device_ips"), f"{what}.device_ips", True)
        r["host_ip"] = self._ip_source(m.get("host_ip"), f"{what}.host_ip", False)
        own = {h for h, *_ in r["hosts"]}
        for src in (r["device_ips"], r["host_ip"]):
            if src and src.explicit:
                self._known(list(src.explicit), own, src.node, f"super node {r['name']!r}")
        return r

    def _supernode_hosts(self, item: yaml.Node, m: dict, i: int, what: str) -> list[tuple]:
        """The super node's hosts as (host, rack, slot, loc), from ``nodes`` or ``racks``."""
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
            return [(h, None, None, loc) for h in hosts or ()]
        elif "racks" in m:
            out: list[tuple] = []
            self.src.sn_nodes[i] = self.loc(m["racks"][1])
            racks = self.seq(m["racks"][1], f"{what} racks")
            if racks is None:
                self.src.sn_broken.add(i)
            for k, rack in enumerate(racks or []):
                rm = self.mapping(rack, f"{what} racks[{k}]", ("name", "nodes"), ("name", "nodes"))
                if not rm or "name" not in rm or "nodes" not in rm:
                    self.src.sn_broken.add(i)
                    continue
                rname = self.name(rm["name"][1], f"{what} racks[{k}].name")
                hosts = self.hostlist(rm["nodes"][1], f"{what} rack {rname!r} nodes")
                if hosts is None:
                    self.src.sn_broken.add(i)
                loc = self.loc(rm["nodes"][1])
                out += [(h, rname, s, loc) for s, h in enumerate(hosts or ())]
            return out
        else:
            if not {(id(item), "nodes"), (id(item), "racks")} & self.suggested:
                self.err(
                    item,
                    f"{what} is missing required key 'nodes' (or 'racks')",
                    "e.g. nodes: gb[001-018]",
                )
            self.src.sn_broken.add(i)
        return []

    def _known(
        self,
        hosts: list[str],
        all_hosts: set[str],
        node: yaml.Node | None,
        scope: str = "any super node",
    ) -> list[str]:
        unknown = [h for h in hosts if h not in all_hosts]
        if unknown:
            import difflib  # only when a name is wrong

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
        if nics is not None and hcas and devices % len(hcas) and len(hcas) % devices:
            self.err(
                nics.loc,
                f"{len(hcas)} HCAs match no device layout of {devices} devices per node",
                "list one HCA per device, one per group of devices (a divisor of the devices),"
                " or several per device (a multiple)",
            )
        kw = {k: v.value for k, v in merged.items() if k not in ("devices", "device_groups")}
        return NodeSpec(devices=devices, device_groups=groups, **kw)

    # -- device and host IPs ------------------------------------------------------------
    def _ip_source(self, item: tuple | None, what: str, devices: bool) -> IpSource | None:
        """``device_ips`` / ``host_ip`` as given; None without (ip_patterns.py then stays
        unloaded: only Ascend sites give IPs)."""
        if item is None:
            return None
        from slurm_supernode.site.ip_patterns import IpSource

        return IpSource.parse(self, item, what, devices)

    def _render_ips(
        self,
        sources: tuple[IpSource | None, ...],
        host: str,
        fields: dict[str, int],
        devices: int,
    ) -> tuple[str, ...] | None:
        """IPs of one node: explicit values first (super node, then site), then a pattern."""
        present = [s for s in sources if s is not None]
        if not present:  # the common case (non-Ascend): no IPs at all
            return None
        from slurm_supernode.site.ip_patterns import render_pattern  # loaded by _ip_source

        target = self.src.device_ip_src if present[0].devices else self.src.host_ip_src
        for src in present:
            if host in src.explicit:
                value, loc = src.explicit[host]
                target[host] = loc
                return value
        for src in present:
            if src.pattern is not None and src.pattern_loc is not None:  # a pattern has its place
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
