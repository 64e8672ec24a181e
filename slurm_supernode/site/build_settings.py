"""Builders of the site-wide sections of a site config (``slurm``, ``links``,
``env_profiles``, ``bench``, ``restarts``, ``doctor``, ``paths``) over the YAML reader."""

from __future__ import annotations

import string
from typing import Any

import yaml

from slurm_supernode.site.finder import short_repr
from slurm_supernode.site.model import (
    CROSS_ISLAND,
    LINK_LEVELS,
    RESTART_CAUSES,
    SMALL_JOB_POLICIES,
    STRATEGIES,
    BenchSettings,
    DoctorSettings,
    EnvProfile,
    LinkLevel,
    ObserveSettings,
    PathSettings,
    SlurmSettings,
)
from slurm_supernode.site.validate import slurm_value_problem
from slurm_supernode.site.yaml_reader import NodeReader

SLURM_KEYS = (
    "partition",
    "feature_format",
    "strategy",
    "spine_switch",
    "supernode_partitions",
    "small_jobs",
    "gres_name",
    "node_options",
)
LINK_KEYS = ("bandwidth_GBps", "latency_us", "kind")
# Renamed: the value was always GB/s (gigabytes per second) while the name said gigabits.
OLD_LINK_KEYS = {"bandwidth_gbps": "bandwidth_GBps"}
BENCH_KEYS = ("regression_pct", "baseline_runs", "sizes", "min_busbw_gbps", "container_image")
PATH_KEYS = ("jobs_dir", "results_db", "state_dir", "prometheus_textfile_dir")
DOCTOR_NUMBERS = ("bandwidth_warn", "bandwidth_fail", "slow_pct", "min_tflops", "min_write_mbps",
                  "min_read_mbps", "min_free_gb")  # fmt: skip
DOCTOR_KEYS = (*DOCTOR_NUMBERS, "size", "checkpoint_dir", "storage_mb")
# observe: key -> (lowest allowed value, must be above it rather than at least it, integer)
OBSERVE_BOUNDS = {
    "sample_period": (0.0, True, False),
    "samples_mb": (0.0, True, False),
    "slow_pct": (0.0, True, False),
    "slow_windows": (1, False, True),
    "profile_after": (1, False, True),
    "profile_steps": (0, False, True),
}
OBSERVE_KEYS = (*OBSERVE_BOUNDS, "pushgateway")
# NodeName attributes snrun writes itself (from node_defaults / super nodes).
RESERVED_NODE_OPTIONS = ("NodeName", "Features", "Gres", "CPUs", "RealMemory", "Port")


class SettingsBuilder(NodeReader):
    """The site-wide sections: slurm, links, env profiles, bench, restarts, doctor, paths."""

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
        strategy = self._choice(m, "strategy", STRATEGIES, "choose one of " + ", ".join(STRATEGIES))
        if strategy is not None:
            kw["strategy"] = strategy
        small = self._choice(
            m,
            "small_jobs",
            SMALL_JOB_POLICIES,
            "choose whole (round up to the super node) or aligned (keep the size, one super node)",
        )
        if small is not None:
            kw["small_jobs"] = small
        if "feature_format" in m:
            fmt = self.name(m["feature_format"][1], "slurm.feature_format", "a feature name format")
            if fmt is not None and self._check_format(m["feature_format"][1], fmt, ("name",)):
                kw["feature_format"] = fmt
        if "supernode_partitions" in m:
            parts = self._partitions(m["supernode_partitions"][1])
            if parts is not None:
                kw["supernode_partitions"] = parts
        if "node_options" in m:
            kw["node_options"] = self._node_options(m["node_options"][1])
        return SlurmSettings(**kw)

    def _choice(self, m: dict, key: str, choices: tuple[str, ...], hint: str) -> str | None:
        """slurm.KEY: one of ``choices`` (None when absent or wrong: the error is recorded)."""
        if key not in m:
            return None
        value = self.name(m[key][1], f"slurm.{key}", "one of " + ", ".join(choices))
        if value is not None and value not in choices:
            self.err(m[key][1], f"unknown {key.replace('_', ' ')} {value!r}", hint)
            return None
        return value

    def _partitions(self, node: yaml.Node) -> tuple[str, ...] | None:
        """slurm.supernode_partitions: plain partition names (None when one is not)."""
        parts = self.names(node, "slurm.supernode_partitions")
        for part in parts or ():
            why = slurm_value_problem(part, ",:")
            if why:
                self.err(
                    node,
                    f"slurm.supernode_partitions item {short_repr(part)} {why}",
                    "partition names are single words",
                )
                return None
        return parts

    def _node_options(self, node: yaml.Node) -> tuple[tuple[str, str], ...]:
        """slurm.node_options: NodeName attributes snrun does not write itself."""
        opts = self.mapping(node, "slurm.node_options", None)
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
            value = self.slurm_value(vnode, f"slurm.node_options.{key}", numbers=True)
            if value is not None:
                pairs.append((key, value))
        return tuple(pairs)

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
            # key -> (minimum, above, hint)
            limits: dict[str, tuple[float | None, float | None, str]] = {
                "bandwidth_GBps": (None, 0.0, "GB/s per device, one direction"),
                "latency_us": (0.0, None, "microseconds"),
            }
            for key in ("bandwidth_GBps", "latency_us"):
                if key in lm:
                    self.src.links[(level, key)] = self.loc(lm[key][1])
                    least, above, hint = limits[key]
                    vals[key] = self.number(
                        lm[key][1], f"links.{level}.{key}", minimum=least, above=above, hint=hint
                    )
            kind = self.name(lm["kind"][1], f"links.{level}.kind") if "kind" in lm else ""
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
        if "container_image" in m:
            image = self.text(m["container_image"][1], "bench.container_image")
            if image is not None:
                kw["container_image"] = image
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
            checkpoint_dir = self.name(m["checkpoint_dir"][1], "doctor.checkpoint_dir", "a path")
            if checkpoint_dir is not None:
                kw["checkpoint_dir"] = checkpoint_dir
        warn, fail = kw.get("bandwidth_warn", 0.6), kw.get("bandwidth_fail", 0.4)
        if fail > warn:
            self.err(node, f"doctor.bandwidth_fail ({fail:g}) is above bandwidth_warn ({warn:g})")
        return DoctorSettings(**kw)

    def _observe(self, node: yaml.Node) -> ObserveSettings:
        """``observe:``: positive periods and sizes, whole numbers of windows and steps."""
        m = self.mapping(node, "observe", OBSERVE_KEYS) or {}
        kw: dict[str, Any] = {}
        for key, (_, vnode) in m.items():
            if key == "pushgateway":
                url = self._gateway_url(vnode)
                if url is not None:
                    kw[key] = url
                continue
            low, strict, whole = OBSERVE_BOUNDS[key]
            what = f"observe.{key}"
            if whole:
                v: float | None = self.integer(vnode, what, int(low))
            elif strict:
                v = self.number(vnode, what, above=low)
            else:
                v = self.number(vnode, what, minimum=low)
            if v is not None:
                kw[key] = v
        return ObserveSettings(**kw)

    def _gateway_url(self, node: yaml.Node) -> str | None:
        """``observe.pushgateway``: http(s)://HOST[:PORT][/PATH], nothing else."""
        from urllib.parse import urlsplit

        text = self.name(node, "observe.pushgateway", "a URL")
        if text is None:
            return None
        try:
            parts = urlsplit(text.strip())
            port_ok = parts.port is None or parts.port > 0
        except ValueError:
            parts, port_ok = None, False
        if (
            parts is None
            or parts.scheme not in ("http", "https")
            or not parts.hostname
            or not (port_ok)
            or parts.query
            or parts.fragment
        ):
            self.err(
                node,
                f"observe.pushgateway {text!r} is not an http(s) URL of a Pushgateway",
                hint="e.g. http://pushgw.example.org:9091",
            )
            return None
        return text.strip().rstrip("/")

    def _paths(self, node: yaml.Node) -> PathSettings:
        m = self.mapping(node, "paths", PATH_KEYS) or {}
        kw = {}
        for key, (_, vnode) in m.items():
            v = self.name(vnode, f"paths.{key}", "a path")
            if v is not None:
                kw[key] = v
        return PathSettings(**kw)
