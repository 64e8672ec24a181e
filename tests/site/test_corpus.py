"""Bad site files, written from docs/site-config.md: every one exits 2 with exactly one line.

Each case edits one line of a small valid site (BASE) and names where the problem must be
reported. In the replacement text a ``^`` marks the expected column on that line (it is removed
before writing); cases whose problem is reported elsewhere give ``at=(line, col)``. Each case
runs ``snrun site validate FILE`` in-process and asserts: exit 2, one line on stderr, that line
starts with ``FILE:LINE:COL: ``, holds the expected fragment and a hint, and no traceback.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from slurm_supernode.cli.main import main
from slurm_supernode.site.loader import parse_site

BASE = """\
name: t
vendor: nvidia
supernodes:
  - name: sn0
    nodes: n[0-3]
  - name: sn1
    nodes: n[4-7]
node_defaults:
  devices: 8
  device_groups: [[0, 1, 2, 3], [4, 5, 6, 7]]
  gres_type: h100
  gres_file: /dev/nvidia[0-7]
  cpus: 64
  memory_mb: 4096
  nics: {socket_ifname: eth0, hcas: [mlx5_0, mlx5_1]}
links:
  node: {bandwidth_GBps: 450, latency_us: 2}
  supernode: {bandwidth_GBps: 200, latency_us: 4}
  inter: {bandwidth_GBps: 50, latency_us: 8}
slurm:
  partition: main
  strategy: features
  spine_switch: spine
  gres_name: gpu
  supernode_partitions: [main]
  node_options: {NodeHostname: localhost}
env_profiles:
  default: {NCCL_DEBUG: INFO}
bench:
  regression_pct: 10
  baseline_runs: 7
  sizes: [1024, 1048576]
  min_busbw_gbps: {inter: 40}
paths:
  jobs_dir: ~/.snrun/jobs
restarts: {app_error: 3}
"""
LINES = BASE.splitlines()


@dataclass(frozen=True)
class Case:
    id: str
    line: int  # 1-based line of BASE to replace (0: append after the last line)
    text: str  # the new line(s); '^' marks the expected column on the first line
    fragment: str
    at: tuple[int, int] | None = None
    extra: tuple[tuple[int, str], ...] = ()  # more (line, text) replacements

    def render(self) -> tuple[str, tuple[int, int]]:
        lines = list(LINES)
        for ln, text in self.extra:
            lines[ln - 1] = text
        text = self.text
        loc = self.at
        if loc is None:
            col = text.index("^")
            loc = (self.line if self.line else len(LINES) + 1, col + 1)
        text = text.replace("^", "", 1) if self.at is None else text
        if self.line:
            lines[self.line - 1] = text
        else:
            lines.append(text)
        return "\n".join(lines) + "\n", loc


def c(id: str, line: int, text: str, fragment: str, at=None, extra=()) -> Case:
    return Case(id, line, text, fragment, at, tuple(extra))


# Line numbers of BASE, named for readability.
NAME, VENDOR, SN0_NAME, SN0_NODES, SN1_NAME, SN1_NODES = 1, 2, 4, 5, 6, 7
DEVICES, GROUPS, GTYPE, GFILE, CPUS, MEM, NICS = 9, 10, 11, 12, 13, 14, 15
L_NODE, L_SN, L_INTER = 17, 18, 19
PART, STRAT, SPINE, GNAME, SNPARTS, NOPTS = 21, 22, 23, 24, 25, 26
ENV_DEFAULT = 28
REGR, BASE_RUNS, SIZES, FLOORS = 30, 31, 32, 33
JOBS_DIR, RESTARTS = 35, 36

SYNTAX = [
    # PyYAML reports where it noticed; the message adds where the construct started.
    c("unclosed-flow-seq", SN0_NODES, "    nodes: [n0", "(it started at 5:12)", at=(6, 9)),
    c(
        "unclosed-flow-map",
        L_NODE,
        "  node: {bandwidth_GBps: 450",
        "(it started at 17:9)",
        at=(18, 12),
    ),
    c("bad-indent", DEVICES, "   devices: 8", "YAML syntax error", at=(10, 3)),
    c("tab-indent", DEVICES, "\tdevices: 8", "YAML syntax error", at=(9, 1)),
    c("unclosed-quote", PART, '  partition: "main', "(it started at 21:14)", at=(37, 1)),
    c("undefined-alias", CPUS, "  cpus: *nope", "YAML syntax error", at=(13, 9)),
    c("stray-colon-key", NAME, "name: t: u", "YAML syntax error", at=(1, 8)),
    c("dup-top-key", 0, "^name: u", "duplicate key 'name'"),
    c("dup-spec-key", CPUS, "  ^devices: 8", "duplicate key 'devices'"),
    c(
        "dup-link-key",
        L_NODE,
        "  node: {bandwidth_GBps: 1, latency_us: 2, ^latency_us: 3}",
        "duplicate",
    ),
    c("dup-env-var", ENV_DEFAULT, "  default: {A: 1, ^A: 2}", "duplicate key 'A'"),
    c("flow-key-not-scalar", ENV_DEFAULT, "  default: {^[a]: 1}", "keys must be plain names"),
    c(
        "document-is-list",
        NAME,
        "- name: t",
        "must be a mapping",
        at=(1, 1),
        extra=[(i, "") for i in range(2, 37)],
    ),
    c(
        "document-is-scalar",
        NAME,
        "just text",
        "must be a mapping",
        at=(1, 1),
        extra=[(i, "") for i in range(2, 37)],
    ),
    c(
        "empty-document",
        NAME,
        "# nothing",
        "the file is empty",
        at=(1, 1),
        extra=[(i, "") for i in range(2, 37)],
    ),
    c("multi-document", 0, "^---", "YAML syntax error"),
]

TYPES = [
    c("devices-string", DEVICES, "  devices: ^eight", "must be an integer, got a string 'eight'"),
    c("devices-float", DEVICES, "  devices: ^8.5", "must be an integer, got a number"),
    c("devices-list", DEVICES, "  devices: ^[8]", "must be an integer, got a list"),
    c("devices-map", DEVICES, "  devices: ^{n: 8}", "must be an integer, got a mapping"),
    c("devices-bool", DEVICES, "  devices: ^true", "must be an integer, got a boolean"),
    c("devices-null", DEVICES, "  devices: ^null", "must be an integer, got null"),
    c("devices-quoted", DEVICES, '  devices: ^"8"', "must be an integer, got a string '8'"),
    c("cpus-string", CPUS, "  cpus: ^many", "node_defaults.cpus must be an integer"),
    c("memory-float", MEM, "  memory_mb: ^1.5", "node_defaults.memory_mb must be an integer"),
    c("gres-type-list", GTYPE, "  gres_type: ^[h100]", "gres_type: expected a name, got a list"),
    c("gres-file-map", GFILE, "  gres_file: ^{a: 1}", "expected a device path, got a mapping"),
    c("gres-type-null", GTYPE, "  gres_type: ^~", "gres_type: expected a name, got null"),
    c("nics-scalar", NICS, "  nics: ^eth0", "must be a mapping"),
    c("nics-unknown", NICS, "  nics: {^ifname: eth0}", "unknown key 'ifname'"),
    c("groups-scalar", GROUPS, "  device_groups: ^4", "must be a list"),
    c("groups-flat", GROUPS, "  device_groups: [^0, 1]", "item must be a list"),
    c("groups-string-id", GROUPS, "  device_groups: [[^a]]", "device id must be an integer"),
    c("link-scalar", L_NODE, "  node: ^fast", "links.node must be a mapping"),
    c(
        "bandwidth-string",
        L_NODE,
        "  node: {bandwidth_GBps: ^fast, latency_us: 2}",
        "must be a number",
    ),
    c(
        "latency-list",
        L_NODE,
        "  node: {bandwidth_GBps: 1, latency_us: ^[2]}",
        "must be a number, got a list",
    ),
    c(
        "link-kind-list",
        L_NODE,
        "  node: {bandwidth_GBps: 1, latency_us: 2, kind: ^[a]}",
        "links.node.kind: expected a name, got a list",
    ),
    c(
        "links-list",
        16,
        "links: ^[]",
        "links must be a mapping",
        extra=[(17, ""), (18, ""), (19, "")],
    ),
    c(
        "slurm-scalar",
        20,
        "slurm: ^x",
        "slurm must be a mapping",
        extra=[(i, "") for i in range(21, 27)],
    ),
    c("partition-list", PART, "  partition: ^[a]", "slurm.partition: expected a name, got a list"),
    c(
        "strategy-int",
        STRAT,
        "  strategy: ^5",
        "slurm.strategy: expected one of auto, block, features, switches, got integer 5",
    ),
    c("node-options-list", NOPTS, "  node_options: ^[a]", "must be a mapping"),
    c("env-profiles-list", 27, "env_profiles: ^[a]", "must be a mapping", extra=[(28, "")]),
    c("env-profile-scalar", ENV_DEFAULT, "  default: ^5", "env_profiles.default must be a mapping"),
    c("env-value-list", ENV_DEFAULT, "  default: {A: ^[1]}", "must be a string, got a list"),
    c(
        "bench-scalar",
        29,
        "bench: ^5",
        "bench must be a mapping",
        extra=[(i, "") for i in range(30, 34)],
    ),
    c("regression-string", REGR, "  regression_pct: ^ten", "must be a number"),
    c("baseline-float", BASE_RUNS, "  baseline_runs: ^7.5", "must be an integer"),
    c("sizes-scalar", SIZES, "  sizes: ^1024", "bench.sizes must be a list"),
    c("sizes-string-item", SIZES, "  sizes: [^1K]", "bench.sizes item must be an integer"),
    c("floors-list", FLOORS, "  min_busbw_gbps: ^[40]", "must be a mapping"),
    c("paths-scalar", 34, "paths: ^x", "paths must be a mapping", extra=[(35, "")]),
    c("jobs-dir-list", JOBS_DIR, "  jobs_dir: ^[a]", "paths.jobs_dir: expected a path, got a list"),
    c("restarts-list", RESTARTS, "restarts: ^[3]", "restarts must be a mapping"),
    c("restart-string", RESTARTS, "restarts: {app_error: ^three}", "must be an integer"),
    c("imex-int", 0, "imex_channels: ^5", "must be true or false"),
    c("name-list", NAME, "name: ^[t]", "name: expected a name, got a list"),
    c("name-empty", NAME, "name: ^''", "name must not be empty"),
    c("vendor-int", VENDOR, "vendor: ^5", "vendor: expected one of"),
    c(
        "supernodes-map",
        3,
        "supernodes: ^{a: 1}",
        "supernodes must be a list",
        extra=[(4, ""), (5, ""), (6, ""), (7, "")],
    ),
    c(
        "supernodes-empty",
        3,
        "supernodes: ^[]",
        "supernodes is empty",
        extra=[(4, ""), (5, ""), (6, ""), (7, "")],
    ),
    c("supernode-scalar", SN1_NAME, "  - ^sn1", "supernodes[1] must be a mapping", extra=[(7, "")]),
    c(
        "sn-name-map",
        SN0_NAME,
        "  - name: ^{a: 1}",
        "supernodes[0].name: expected a name, got a mapping",
    ),
    c(
        "sn-pod-string",
        SN0_NODES,
        "    nodes: n[0-3]\n    super_pod_id: x",
        "super_pod_id must be an integer",
        at=(6, 19),
    ),
    c(
        "sn-spares-string",
        SN0_NODES,
        "    nodes: n[0-3]\n    spares: two",
        "spares must be an integer",
        at=(6, 13),
    ),
    c(
        "sn-feature-list",
        SN0_NODES,
        "    nodes: n[0-3]\n    feature: [a]",
        "feature: expected a feature name, got a list",
        at=(6, 14),
    ),
    c(
        "sn-node-defaults-list",
        SN0_NODES,
        "    nodes: n[0-3]\n    node_defaults: [a]",
        "must be a mapping",
        at=(6, 20),
    ),
    c("racks-scalar", SN0_NODES, "    racks: ^r1", "racks must be a list"),
    c("rack-missing-nodes", SN0_NODES, "    racks: [^{name: r1}]", "missing required key 'nodes'"),
    c("overrides-map", 0, "node_overrides: ^{a: 1}", "node_overrides must be a list"),
    c("override-bad-key", 0, "node_overrides: [{nodes: n0, ^cpu: 1}]", "unknown key 'cpu'"),
    c(
        "hcas-int-items",
        NICS,
        "  nics: {hcas: [^[a]]}",
        "nics.hcas[0]: expected a name, got a list",
    ),
]

RANGES = [
    c("devices-zero", DEVICES, "  devices: ^0", "must be >= 1, got 0"),
    c("devices-negative", DEVICES, "  devices: ^-1", "must be >= 1, got -1"),
    c("devices-1025", DEVICES, "  devices: ^1025", "must be <= 1024, got 1025"),
    c("devices-absurd", DEVICES, "  devices: ^99999999999", "must be <= 1024, got 99999999999"),
    c("devices-40-digits", DEVICES, "  devices: ^" + "9" * 40, "a 40-digit number"),
    c("devices-5000-digits", DEVICES, "  devices: ^1" + "0" * 5000, "a 5001-digit number"),
    c("devices-hex-huge", DEVICES, "  devices: ^0xffffffffffff", "must be <= 1024"),
    c("cpus-zero", CPUS, "  cpus: ^0", "must be >= 1"),
    c("cpus-too-many", CPUS, "  cpus: ^65536", "must be <= 65535"),
    c("memory-zero", MEM, "  memory_mb: ^0", "must be >= 1"),
    c("memory-huge", MEM, "  memory_mb: ^2199023255553", "must be <= 1099511627776"),
    c(
        "bandwidth-zero",
        L_NODE,
        "  node: {bandwidth_GBps: ^0, latency_us: 2}",
        "must be > 0, got 0",
    ),
    c(
        "bandwidth-negative",
        L_SN,
        "  supernode: {bandwidth_GBps: ^-5, latency_us: 2}",
        "must be > 0",
    ),
    c(
        "bandwidth-nan",
        L_NODE,
        "  node: {bandwidth_GBps: ^.nan, latency_us: 2}",
        "must be a finite number",
    ),
    c("bandwidth-inf", L_INTER, "  inter: {bandwidth_GBps: ^.inf, latency_us: 2}", "finite"),
    c("bandwidth-neg-inf", L_INTER, "  inter: {bandwidth_GBps: ^-.inf, latency_us: 2}", "finite"),
    c("bandwidth-NaN-caps", L_NODE, "  node: {bandwidth_GBps: ^.NaN, latency_us: 2}", "finite"),
    c(
        "latency-negative",
        L_NODE,
        "  node: {bandwidth_GBps: 1, latency_us: ^-1}",
        "must be >= 0, got -1",
    ),
    c("latency-nan", L_NODE, "  node: {bandwidth_GBps: 1, latency_us: ^.nan}", "finite"),
    c("latency-inf", L_SN, "  supernode: {bandwidth_GBps: 1, latency_us: ^.inf}", "finite"),
    c("regression-zero", REGR, "  regression_pct: ^0", "must be in (0, 100)"),
    c("regression-100", REGR, "  regression_pct: ^100", "must be in (0, 100)"),
    c("regression-nan", REGR, "  regression_pct: ^.nan", "finite"),
    c("baseline-zero", BASE_RUNS, "  baseline_runs: ^0", "must be >= 1"),
    c("baseline-huge", BASE_RUNS, "  baseline_runs: ^10001", "must be <= 10000"),
    c("sizes-zero", SIZES, "  sizes: [1024, ^0]", "must be >= 1"),
    c("sizes-huge", SIZES, "  sizes: [^2199023255553]", "must be <= 1099511627776"),
    c("floor-zero", FLOORS, "  min_busbw_gbps: {inter: ^0}", "must be > 0"),
    c("floor-inf", FLOORS, "  min_busbw_gbps: {inter: ^.inf}", "finite"),
    c("floor-unknown-scope", FLOORS, "  min_busbw_gbps: {^world: 4}", "unknown key 'world'"),
    c("restarts-negative", RESTARTS, "restarts: {app_error: ^-1}", "must be >= 0"),
    c("restarts-huge", RESTARTS, "restarts: {app_error: ^100001}", "must be <= 100000"),
    c("restarts-unknown-cause", RESTARTS, "restarts: {^crash: 1}", "unknown key 'crash'"),
    c(
        "spares-negative",
        SN0_NODES,
        "    nodes: n[0-3]\n    spares: -1",
        "must be >= 0",
        at=(6, 13),
    ),
    c(
        "spares-all",
        SN0_NODES,
        "    nodes: n[0-3]\n    spares: 4",
        "less than its 4 nodes",
        at=(6, 13),
    ),
    c(
        "pod-negative",
        SN0_NODES,
        "    nodes: n[0-3]\n    super_pod_id: -1",
        "must be >= 0",
        at=(6, 19),
    ),
    c(
        "groups-not-covering",
        GROUPS,
        "  device_groups: ^[[0, 1, 2, 3]]",
        "do not cover device(s) 4,5,6,7",
    ),
    c("groups-overlap", GROUPS, "  device_groups: ^[[0, 1, 2, 3], [3, 4, 5, 6, 7]]", "(overlap)"),
    c(
        "groups-out-of-range",
        GROUPS,
        "  device_groups: ^[[0, 1, 2, 3], [4, 5, 6, 8]]",
        "out of range 0-7",
    ),
    c(
        "groups-empty-group",
        GROUPS,
        "  device_groups: ^[[0, 1, 2, 3, 4, 5, 6, 7], []]",
        "device group 1 is empty",
    ),
    c("groups-empty", GROUPS, "  device_groups: ^[]", "device_groups is empty"),
    c("groups-negative-id", GROUPS, "  device_groups: [[^-1]]", "must be >= 0"),
    c("groups-huge-id", GROUPS, "  device_groups: [[^99999]]", "must be <= 1024"),
    c(
        "hca-count-3",
        NICS,
        "  nics: ^{hcas: [a, b, c]}",
        "3 HCAs match no device layout of 8 devices",
    ),
    c("hca-count-5", NICS, "  nics: ^{hcas: 'a,b,c,d,e'}", "5 HCAs match no device layout"),
    c("hca-duplicate", NICS, "  nics: {hcas: ^[a, a]}", "lists 'a' twice"),
    c(
        "node-port-ok-but-devices-override-zero",
        0,
        "node_overrides: [{nodes: n0, devices: ^0}]",
        "must be >= 1",
    ),
]

REFERENCES = [
    c("unknown-top-key", 0, "^nodes: n0", "unknown key 'nodes' in the site config"),
    c("typo-top-key", 0, "^envprofiles: {}", "did you mean 'env_profiles'?"),
    c("typo-spec-key", DEVICES, "  ^devics: 8", "did you mean 'devices'?"),
    c("typo-slurm-key", STRAT, "  ^stratgy: features", "did you mean 'strategy'?"),
    c("typo-sn-key", SN0_NODES, "    ^node: n[0-3]", "unknown key 'node'"),
    c("unknown-vendor", VENDOR, "vendor: ^amd", "unknown vendor 'amd'"),
    c("unknown-strategy", STRAT, "  strategy: ^topology", "unknown strategy 'topology'"),
    c("missing-name", NAME, "description: x", "missing required key 'name'", at=(1, 1)),
    c("missing-vendor", VENDOR, "description: x", "missing required key 'vendor'", at=(1, 1)),
    c(
        "missing-links",
        16,
        "",
        "missing required key 'links'",
        at=(1, 1),
        extra=[(17, ""), (18, ""), (19, "")],
    ),
    c("missing-link-level", L_INTER, "", "links is missing required key 'inter'", at=(17, 3)),
    c(
        "missing-latency",
        L_NODE,
        "  node: ^{bandwidth_GBps: 1}",
        "missing required key 'latency_us'",
    ),
    c(
        "missing-sn-name",
        SN0_NAME,
        "  - ^nodes: n[0-3]",
        "missing required key 'name'",
        extra=[(5, "")],
    ),
    c(
        "missing-sn-nodes",
        SN1_NODES,
        "    feature: f1",
        "missing required key 'nodes' (or 'racks')",
        at=(6, 5),
    ),
    c(
        "nodes-and-racks",
        SN0_NODES,
        "    nodes: n[0-3]\n    racks: []",
        "has both nodes and racks",
        at=(6, 5),
    ),
    c(
        "devices-not-set",
        DEVICES,
        "  cpus: 8",
        "devices per node is not set",
        at=(4, 11),
        extra=[(GROUPS, ""), (CPUS, "")],
    ),
    c("dup-sn-name", SN1_NAME, "  - name: ^sn0", "duplicate super node name 'sn0'"),
    c("host-in-two", SN1_NODES, "    nodes: ^n[3-7]", "host n3 is in super nodes 'sn0' and 'sn1'"),
    c("host-twice", SN0_NODES, "    nodes: ^n[0-3],n2", "host n2 appears twice"),
    c(
        "override-unknown-host",
        0,
        "node_overrides: [{nodes: ^x9, cpus: 4}]",
        "host 'x9' is not in any super node",
    ),
    c(
        "device-ips-nvidia",
        0,
        "device_ips: ^{pattern: '10.0.{gnode}.{dev}'}",
        "only used with vendor: ascend",
    ),
    c(
        "super-pod-nvidia",
        SN0_NODES,
        "    nodes: n[0-3]\n    super_pod_id: 1",
        "only used with vendor: ascend",
        at=(6, 19),
    ),
    c(
        "ip-pattern-field",
        0,
        "device_ips: {pattern: ^'10.0.{rack}.{dev}'}",
        "unknown field {rack}",
        extra=[(VENDOR, "vendor: ascend")],
    ),
    c(
        "ip-malformed",
        0,
        "device_ips: {pattern: ^'10.0.{node+300}.{dev}'}",
        "malformed IP",
        extra=[(VENDOR, "vendor: ascend")],
    ),
    c(
        "ip-duplicate",
        0,
        "device_ips: {pattern: ^'10.0.0.{dev}'}",
        "is already used by",
        extra=[(VENDOR, "vendor: ascend")],
    ),
    c(
        "shared-feature",
        STRAT,
        "  strategy: features\n  feature_format: sn",
        "share feature 'sn'",
        at=(23, 19),
    ),
    c(
        "feature-format-field",
        STRAT,
        "  strategy: features\n  feature_format: '{rack}'",
        "unknown field {rack}",
        at=(23, 19),
    ),
    c(
        "feature-format-brace",
        STRAT,
        "  strategy: features\n  feature_format: '{name'",
        "bad format",
        at=(23, 19),
    ),
    c(
        "block-unequal",
        STRAT,
        "  strategy: block",
        "strategy block needs equal super nodes",
        at=(7, 12),
        extra=[(SN1_NODES, "    nodes: n[4-6]")],
    ),
    c(
        "switch-name-spine",
        SPINE,
        "  spine_switch: spine",
        "has the name of the spine switch",
        at=(4, 11),
        extra=[(STRAT, "  strategy: switches"), (SN0_NAME, "  - name: spine")],
    ),
    c(
        "switch-name-long",
        STRAT,
        "  strategy: switches",
        "Slurm switch names allow 64",
        at=(4, 11),
        extra=[(SN0_NAME, "  - name: " + "s" * 65)],
    ),
    c("reserved-node-option", NOPTS, "  node_options: {^Gres: gpu:1}", "may not set Gres"),
    c("reserved-node-option-port", NOPTS, "  node_options: {^Port: 1}", "may not set Port"),
    c("env-var-digit", ENV_DEFAULT, "  default: {^1X: a}", "bad environment variable name '1X'"),
    c("env-var-dash", ENV_DEFAULT, "  default: {^A-B: a}", "bad environment variable name"),
    c("env-var-unicode", ENV_DEFAULT, "  default: {^É: a}", "bad environment variable name"),
    c("old-link-key", L_NODE, "  node: {^bandwidth_gbps: 1, latency_us: 2}", "old name"),
]

SIZES_ = [
    c("hostlist-5M", SN1_NODES, "    nodes: ^n[0-4999999]", "5000000 hosts"),
    c("hostlist-100M-2d", SN1_NODES, "    nodes: ^a[0-9999]b[0-9999]", "100000000 hosts"),
    c(
        "hostlist-5-pieces-1M",
        SN1_NODES,
        "    nodes: ^" + ",".join(f"p{k}x[0-999999]" for k in range(5)),
        "5000000 hosts",
    ),
    c(
        "hostlist-site-total",
        SN1_NODES,
        "    nodes: ^m[0-249999]",
        "at most 250000",
        extra=[(SN0_NODES, "    nodes: n[0-9]")],
    ),
    c("hostlist-huge-number", SN1_NODES, "    nodes: ^n[0-99999999999999999999999]", "hosts"),
    c("override-5M", 0, "node_overrides: [{nodes: ^'x[0-4999999]', cpus: 1}]", "5000000 hosts"),
    c(
        "site-devices",
        DEVICES,
        "  devices: 1024",
        "a site may have at most 1000000",
        at=(6, 11),
        extra=[(GROUPS, ""), (SN1_NODES, "    nodes: m[0-2000]"), (NICS, "")],
    ),
    c(
        "groups-too-many",
        GROUPS,
        "  device_groups: ^[" + ",".join(["[0]"] * 1025) + "]",
        "more than 1024",
    ),
    c(
        "sizes-too-many",
        SIZES,
        "  sizes: ^[" + ",".join(["1"] * 1001) + "]",
        "more than 1000 sizes",
    ),
    c(
        "hcas-too-many",
        NICS,
        "  nics: {hcas: ^[" + ",".join(f"h{k}" for k in range(1025)) + "]}",
        "lists 1025 items; at most 1024",
    ),
]

ENCODINGS = [
    c("bell-in-value", PART, "  partition: ma^\x07in", "control character U+0007"),
    c("nul-in-value", PART, "  partition: ma^\x00in", "control character U+0000"),
    c("escape-in-key", CPUS, "  ^\x1bcpus: 8", "control character U+001B"),
    c("del-char", NAME, "name: t^\x7f", "control character U+007F"),
    c("backspace-in-comment", STRAT, "  strategy: features  # x^\x08", "control character U+0008"),
    c("vertical-tab", SN1_NODES, "    nodes: n[4-7]^\x0b", "control character U+000B"),
    c("c1-control", SPINE, "  spine_switch: sp^\x9dine", "control character U+009D"),
    c("form-feed-late", RESTARTS, "restarts: {app_error: 3}^\x0c", "control character U+000C"),
]
# Bytes that are not UTF-8: (id, line, text before the byte, the byte, fragment).
BYTES = [
    ("latin1-e-acute", PART, "  partition: caf", b"\xe9", "byte 0xe9 is not UTF-8"),
    ("ff-byte", NAME, "name: ", b"\xff", "byte 0xff"),
    ("lone-continuation", SPINE, "  spine_switch: x", b"\x80", "byte 0x80"),
    ("truncated-sequence", RESTARTS, "restarts: {app_error: 3} # ", b"\xc3", "byte 0xc3"),
    ("utf16-bom", NAME, "", b"\xff\xfe", "byte 0xff"),
    ("surrogate-utf8", GTYPE, "  gres_type: h", b"\xed\xa0\x80", "byte 0xed"),
    ("after-multibyte", PART, "  partition: é", b"\xfe", "byte 0xfe"),
]

HOSTILE = [
    c("gres-type-newline", GTYPE, '  gres_type: ^"h100\\nNodeName=evil CPUs=1"', "contains '\\n'"),
    c("gres-type-space", GTYPE, "  gres_type: ^'h 100'", "contains ' '"),
    c("gres-type-equals", GTYPE, "  gres_type: ^h=1", "contains '='"),
    c("gres-type-hash", GTYPE, "  gres_type: ^'h#1'", "contains '#'"),
    c("gres-type-colon", GTYPE, "  gres_type: ^'h:1'", "contains ':'"),
    c("gres-type-comma", GTYPE, "  gres_type: ^'a,b'", "contains ','"),
    c("gres-type-unicode", GTYPE, "  gres_type: ^hé", "contains 'é'"),
    c("gres-file-newline", GFILE, '  gres_file: ^"/dev/x\\nNodeName=evil"', "contains '\\n'"),
    c("gres-file-space", GFILE, "  gres_file: ^'/dev/nvidia 0'", "contains ' '"),
    c("gres-file-hash", GFILE, "  gres_file: ^'/dev/x#y'", "contains '#'"),
    c("gres-file-quote", GFILE, "  gres_file: ^'/dev/\"x'", "contains '\"'"),
    c("gres-file-tab", GFILE, '  gres_file: ^"/dev/x\\ty"', "contains '\\t'"),
    c("gres-file-cr", GFILE, '  gres_file: ^"/dev/x\\ry"', "contains '\\r'"),
    c(
        "node-option-newline",
        NOPTS,
        '  node_options: {NodeAddr: ^"a\\nNodeName=evil CPUs=1"}',
        "contains '\\n'",
    ),
    c("node-option-space", NOPTS, "  node_options: {Weight: ^'1 Features=x'}", "contains ' '"),
    c("node-option-hash", NOPTS, "  node_options: {Weight: ^'1#'}", "contains '#'"),
    c("node-option-equals", NOPTS, "  node_options: {Weight: ^a=b}", "contains '='"),
    c("node-option-backslash", NOPTS, "  node_options: {Weight: ^'a\\b'}", "contains '\\\\'"),
    c(
        "node-option-key-space",
        NOPTS,
        "  node_options: {^'Node Addr': x}",
        "bad NodeName attribute",
    ),
    c("node-option-key-unicode", NOPTS, "  node_options: {^Wéight: 1}", "bad NodeName attribute"),
    c("node-option-key-newline", NOPTS, '  node_options: {^"A\\nB": 1}', "bad NodeName attribute"),
    c("partition-space", PART, "  partition: ^'a b'", "contains ' '"),
    c("partition-newline", PART, '  partition: ^"a\\nPartitionName=x"', "contains '\\n'"),
    c("partition-hash", PART, "  partition: ^'a#b'", "contains '#'"),
    c("partition-comma", PART, "  partition: ^'a,b'", "contains ','"),
    c("spine-newline", SPINE, '  spine_switch: ^"s\\nSwitchName=x"', "contains '\\n'"),
    c("spine-equals", SPINE, "  spine_switch: ^s=x", "contains '='"),
    c("gres-name-colon", GNAME, "  gres_name: ^'gpu:x'", "contains ':'"),
    c("gres-name-unicode", GNAME, "  gres_name: ^gpü", "contains 'ü'"),
    c("sn-partitions-space", SNPARTS, "  supernode_partitions: ^['a b']", "contains ' '"),
    c("sn-partitions-newline", SNPARTS, '  supernode_partitions: ^["a\\nb"]', "contains '\\n'"),
    c(
        "feature-space",
        SN0_NODES,
        "    nodes: n[0-3]\n    feature: 'a b'",
        "contains ' '",
        at=(6, 14),
    ),
    c(
        "feature-newline",
        SN0_NODES,
        '    nodes: n[0-3]\n    feature: "a\\nb"',
        "contains '\\n'",
        at=(6, 14),
    ),
    c(
        "feature-hash",
        SN0_NODES,
        "    nodes: n[0-3]\n    feature: 'a#b'",
        "contains '#'",
        at=(6, 14),
    ),
    c(
        "feature-pipe",
        SN0_NODES,
        "    nodes: n[0-3]\n    feature: 'a|b'",
        "contains '|'",
        at=(6, 14),
    ),
    c(
        "feature-amp",
        SN0_NODES,
        "    nodes: n[0-3]\n    feature: 'a&b'",
        "contains '&'",
        at=(6, 14),
    ),
    c(
        "feature-bracket",
        SN0_NODES,
        "    nodes: n[0-3]\n    feature: 'a[1]'",
        "contains '['",
        at=(6, 14),
    ),
    c(
        "feature-unicode",
        SN0_NODES,
        "    nodes: n[0-3]\n    feature: 'fé'",
        "contains 'é'",
        at=(6, 14),
    ),
    c(
        "feature-format-space",
        STRAT,
        "  strategy: features\n  feature_format: '{name} x'",
        "contains ' '",
        at=(23, 19),
    ),
    c("sn-name-space", SN0_NAME, "  - name: ^'sn 0'", "contains ' '"),
    c("sn-name-newline", SN0_NAME, '  - name: ^"sn\\nSwitchName=x"', "contains '\\n'"),
    c("sn-name-equals", SN0_NAME, "  - name: ^sn=0", "contains '='"),
    c("sn-name-hash", SN0_NAME, "  - name: ^'sn#0'", "contains '#'"),
    c("sn-name-comma", SN0_NAME, "  - name: ^'sn,0'", "contains ','"),
    c("sn-name-unicode", SN0_NAME, "  - name: ^snö", "contains 'ö'"),
    c("host-semicolon", SN0_NODES, "    nodes: ^'n[0-3];rm'", "character ';' is not allowed"),
    c("host-space", SN0_NODES, "    nodes: ^'n0 n1'", "character ' ' is not allowed"),
    c("host-equals", SN0_NODES, "    nodes: ^n=0", "character '=' is not allowed"),
    c("host-hash", SN0_NODES, "    nodes: ^'n#0'", "character '#' is not allowed"),
    c("host-unicode", SN0_NODES, "    nodes: ^nö", "character 'ö' is not allowed"),
    c("host-dollar", SN0_NODES, "    nodes: ^'$(id)'", "character '$' is not allowed"),
    c("host-backtick", SN0_NODES, "    nodes: ^'n`id`'", "character '`' is not allowed"),
    c(
        "host-newline",
        SN0_NODES,
        '    nodes: ^"n0\\nNodeName=evil"',
        "character '\\n' is not allowed",
    ),
    c("host-group", SN0_NODES, "    nodes: ^'@all'", "character '@' is not allowed"),
    c("host-intersection", SN0_NODES, "    nodes: ^'n[0-3]&n1'", "character '&' is not allowed"),
    c("host-difference", SN0_NODES, "    nodes: ^'n[0-3]!n1'", "character '!' is not allowed"),
    c("host-xor", SN0_NODES, "    nodes: ^'n[0-3]^n1'", "character '^' is not allowed"),
    c("host-step", SN0_NODES, "    nodes: ^'n[0-6/2]'", "character '/' is not allowed"),
    c("range-three", SN0_NODES, "    nodes: ^'n[1-2-3]'", "is not N or LO-HI"),
    c("range-padding", SN0_NODES, "    nodes: ^'n[01-100]'", "pads 01 to 2 digits but not 100"),
    c("range-padding-hi", SN0_NODES, "    nodes: ^'n[1-004]'", "pads 004 to 3 digits but not 1"),
    c("range-backwards", SN0_NODES, "    nodes: ^'n[3-0]'", "goes backwards"),
    c("range-letters", SN0_NODES, "    nodes: ^'n[a-d]'", "is not N or LO-HI"),
    c("range-empty", SN0_NODES, "    nodes: ^'n[]'", "empty range"),
    c("range-unclosed", SN0_NODES, "    nodes: ^'n[0-3'", "missing ']'"),
    c("range-unopened", SN0_NODES, "    nodes: ^'n0]'", "unmatched ']'"),
    c("range-nested", SN0_NODES, "    nodes: ^'n[[0]]'", "nested '['"),
    c("host-stray-comma", SN0_NODES, "    nodes: ^'n0,,n1'", "empty host name"),
    c("host-no-prefix", SN0_NODES, "    nodes: ^'[0-3]'", "no host name prefix"),
    c("host-empty", SN0_NODES, "    nodes: ^''", "must not be empty"),
    c(
        "tag-python-apply",
        CPUS,
        "  cpus: ^!!python/object/apply:os.system ['id']",
        "YAML tag '!!python/object/apply:os.system'",
    ),
    c(
        "tag-python-name",
        CPUS,
        "  cpus: ^!!python/name:os.system",
        "YAML tag '!!python/name:os.system'",
    ),
    c("tag-custom-scalar", PART, "  partition: ^!custom main", "YAML tag '!custom'"),
    c("tag-custom-map", 20, "slurm: ^!cfg", "YAML tag '!cfg'"),
    c("tag-binary", GTYPE, "  gres_type: ^!!binary aGVsbG8=", "YAML tag '!!binary'"),
    c("tag-set", ENV_DEFAULT, "  default: ^!!set {A: null}", "YAML tag '!!set'"),
    c("tag-omap", ENV_DEFAULT, "  default: ^!!omap [{A: b}]", "YAML tag '!!omap'"),
    c("tag-on-key", ENV_DEFAULT, "  default: {^!k A: b}", "YAML tag '!k'"),
    c("tag-verbatim", NAME, "name: ^!<tag:example.com,2000:x> t", "YAML tag"),
    c(
        "tag-after-anchor",
        GROUPS,
        "  device_groups: ^&g !x [[0, 1, 2, 3, 4, 5, 6, 7]]",
        "YAML tag '!x'",
    ),
]


# A number, boolean, date or null where a name (or list of names) is expected: refused at its
# position, never turned into a name "5" / "True" (quoting says the name is meant).
NAMES = [
    c("name-int", NAME, "name: ^5", "name: expected a name, got integer 5"),
    c("name-bool", NAME, "name: ^yes", "name: expected a name, got boolean yes"),
    c("name-null", NAME, "name:", "name: expected a name, got null", at=(1, 6)),
    c("vendor-bool", VENDOR, "vendor: ^true", "vendor: expected one of nvidia"),
    c("sn-name-int", SN0_NAME, "  - name: ^0", "supernodes[0].name: expected a name, got integer"),
    c("sn-name-float", SN1_NAME, "  - name: ^1.5", "expected a name, got number 1.5"),
    c("sn-name-null", SN1_NAME, "  - name: ^~", "supernodes[1].name: expected a name, got null"),
    c("sn-nodes-int", SN0_NODES, "    nodes: ^1234", "nodes: expected a hostlist, got integer"),
    c("sn-nodes-date", SN0_NODES, "    nodes: ^2024-01-01", "got date 2024-01-01"),
    c(
        "sn-feature-int",
        SN0_NODES,
        "    nodes: n[0-3]\n    feature: 7",
        "feature: expected a feature name, got integer 7",
        at=(6, 14),
    ),
    c(
        "rack-name-bool",
        SN0_NODES,
        "    racks: [{name: ^off, nodes: 'n[0-3]'}]",
        "racks[0].name: expected a name, got boolean off",
    ),
    c(
        "override-nodes-int",
        0,
        "node_overrides: [{nodes: ^5, cpus: 8}]",
        "node_overrides[0].nodes: expected a hostlist, got integer 5",
    ),
    c("gres-type-int", GTYPE, "  gres_type: ^910", "gres_type: expected a name, got integer 910"),
    c("gres-file-bool", GFILE, "  gres_file: ^true", "expected a device path, got boolean"),
    c("hcas-int", NICS, "  nics: {hcas: ^5}", "nics.hcas: expected a name or list of names, got"),
    c("hcas-float", NICS, "  nics: {hcas: ^0.5}", "expected a name or list of names, got number"),
    c("hcas-null", NICS, "  nics: {hcas: ^null}", "nics.hcas: expected a name or list of names"),
    c("hcas-item-int", NICS, "  nics: {hcas: [mlx5_0, ^1]}", "nics.hcas[1]: expected a name"),
    c("hcas-item-bool", NICS, "  nics: {hcas: [^on, mlx5_1]}", "hcas[0]: expected a name, got boo"),
    c("hcas-item-null", NICS, "  nics: {hcas: [a, ^~]}", "nics.hcas[1]: expected a name, got null"),
    c("ifname-int", NICS, "  nics: {socket_ifname: ^0}", "expected an interface name, got integ"),
    c("ifname-null", NICS, "  nics: {socket_ifname: ^null}", "expected an interface name, got nu"),
    c("link-kind-int", L_NODE, "  node: {bandwidth_GBps: 1, latency_us: 2, kind: ^5}", "kind: exp"),
    c("partition-int", PART, "  partition: ^7", "slurm.partition: expected a name, got integer 7"),
    c(
        "partition-null",
        PART,
        "  partition:",
        "slurm.partition: expected a name, got null",
        at=(21, 13),
    ),
    c("strategy-bool", STRAT, "  strategy: ^no", "slurm.strategy: expected one of"),
    c("spine-float", SPINE, "  spine_switch: ^1.0", "slurm.spine_switch: expected a name, got nu"),
    c("gres-name-bool", GNAME, "  gres_name: ^true", "slurm.gres_name: expected a name, got bool"),
    c("sn-parts-int", SNPARTS, "  supernode_partitions: ^3", "expected a name or list of names"),
    c("sn-parts-item", SNPARTS, "  supernode_partitions: [main, ^1]", "supernode_partitions[1]:"),
    c("node-option-key-int", NOPTS, "  node_options: {^5: x}", "node_options key: expected a n"),
    c("profile-key-int", ENV_DEFAULT, "  ^1: {NCCL_DEBUG: INFO}", "env_profiles key: expected a"),
    c("env-var-key-bool", ENV_DEFAULT, "  default: {^true: 1}", "env_profiles.default key: exp"),
    c("jobs-dir-int", JOBS_DIR, "  jobs_dir: ^5", "paths.jobs_dir: expected a path, got integer"),
    c("jobs-dir-null", JOBS_DIR, "  jobs_dir: ^~", "paths.jobs_dir: expected a path, got null"),
    c("checkpoint-dir-bool", 0, "doctor: {checkpoint_dir: ^false}", "expected a path, got bool"),
    c("feature-format-int", STRAT, "  feature_format: ^12", "expected a feature name format"),
    c(
        "host-ip-int",
        0,
        "host_ip: {nodes: {n0: ^10}}",
        "host_ip.nodes.n0: expected an IP address, got integer 10",
    ),
    c(
        "host-ip-host-key-int",
        0,
        "host_ip: {nodes: {^5: 10.0.0.1}}",
        "host_ip.nodes key: expected a name, got integer 5",
    ),
    c("host-ip-pattern-float", 0, "host_ip: ^10.5", "host_ip pattern: expected an IP pattern"),
]


def _bytes_case(id, line, before, raw, fragment):
    lines = [ln.encode() for ln in LINES]
    lines[line - 1] = before.encode() + raw + b"x"
    col = len(before) + 1
    return pytest.param(b"\n".join(lines) + b"\n", (line, col), fragment, id=id)


FILE_CASES = [
    pytest.param(*case.render(), case.fragment, id=case.id)
    for case in SYNTAX + TYPES + NAMES + RANGES + REFERENCES + SIZES_ + ENCODINGS + HOSTILE
] + [_bytes_case(*b) for b in BYTES]


def test_base_is_valid_and_corpus_is_large():
    site, problems = parse_site(BASE, "t.yaml")
    assert problems == [] and site is not None
    assert len(FILE_CASES) >= 200
    assert len({p.id for p in FILE_CASES}) == len(FILE_CASES)


def assert_one_line(err: str, prefix: str, fragment: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith(prefix), (line, prefix)
    assert fragment in line, (fragment, line)
    assert "(hint: " in line and line.endswith(")"), line
    for leak in ("Traceback", "<unicode string>", "padding length", "RangeSet", "NodeSet", "yaml."):
        assert leak not in line, line
    return line


@pytest.mark.parametrize(("content", "loc", "fragment"), FILE_CASES)
def test_bad_site_file(tmp_path, capsys, content, loc, fragment):
    path = tmp_path / "site.yaml"
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    assert main(["site", "validate", str(path)]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert_one_line(out.err, f"{path}:{loc[0]}:{loc[1]}: ", fragment)


# -- all problems, in order ------------------------------------------------------------------
def test_every_problem_of_a_mapping_is_reported_in_order():
    """A missing key does not hide a bad value next to it; problems come sorted by position."""
    text = (
        BASE.replace("  node: {bandwidth_GBps: 450, latency_us: 2}", "  node: {bandwidth_GBps: -1}")
        .replace("  cpus: 64", "  cpus: 0")
        .replace("vendor: nvidia", "vendor: amd")
    )
    _, problems = parse_site(text, "t.yaml")
    got = [(p.line, p.col, p.message) for p in problems]
    assert got == sorted(got)
    assert [(ln, col) for ln, col, _ in got] == [(2, 9), (13, 9), (17, 9), (17, 26)]
    assert "missing required key 'latency_us'" in got[2][2]
    assert "bandwidth_GBps must be > 0" in got[3][2]


def test_alias_bombs_are_refused_at_once(tmp_path, capsys):
    """'Billion laughs': aliases of aliases expand past the bound; refused from node sizes."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 10)}]" for k in range(1, 9)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n" + BASE)
    assert main(["site", "validate", str(path)]) == 2
    assert_one_line(capsys.readouterr().err, f"{path}:6:5: ", "expands to more than 1000000")


def test_many_aliased_overrides_are_bounded(capsys, tmp_path):
    hosts = ",".join(["n[0-7]"] * 12_500)  # 100,000 hosts of the site, named again and again
    text = BASE.replace("name: t\n", f"name: t\nx: &o {{nodes: '{hosts}', cpus: 1}}\n", 1)
    text = text.replace("x: &o", "node_overrides: [&o").replace(
        "cpus: 1}\n", "cpus: 1}, " + ", ".join(["*o"] * 20) + "]\n", 1
    )
    path = tmp_path / "o.yaml"
    path.write_text(text)
    assert main(["site", "validate", str(path)]) == 2
    assert_one_line(capsys.readouterr().err, f"{path}:2:", "node_overrides name")


def test_anchors_and_aliases_are_plain_yaml():
    text = BASE.replace("  devices: 8", "  devices: &d 8").replace("  cpus: 64", "  cpus: *d")
    site, problems = parse_site(text, "t.yaml")
    assert problems == [] and site.nodes[0].spec.cpus == 8


# -- the --site and FILE paths -------------------------------------------------------------
def _paths(tmp_path):
    (tmp_path / "FILE").write_text("x\n")
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "broken.yaml").symlink_to(tmp_path / "gone.yaml")
    (tmp_path / "loop.yaml").symlink_to(tmp_path / "loop.yaml")
    return {
        "missing": (tmp_path / "nope.yaml", "no such file"),
        "directory": (tmp_path / "dir", "is a directory"),
        "fifo": (tmp_path / "fifo.yaml", "is a FIFO"),
        "broken-symlink": (tmp_path / "broken.yaml", "is a broken symbolic link"),
        "symlink-loop": (tmp_path / "loop.yaml", "loop of symbolic links"),
        "parent-is-file": (tmp_path / "FILE" / "x.yaml", "FILE is a file, not a directory"),
        "name-too-long": (tmp_path / ("x" * 300 + ".yaml"), "file name is too long"),
        "device": ("/dev/null", "not a regular file"),
    }


PATH_KINDS = [
    "missing",
    "directory",
    "fifo",
    "broken-symlink",
    "symlink-loop",
    "parent-is-file",
    "name-too-long",
    "device",
]


@pytest.mark.parametrize("kind", PATH_KINDS)
@pytest.mark.parametrize("command", ["validate", "show", "export", "plan", "submit"])
def test_site_path_says_what_it_is(tmp_path, capsys, monkeypatch, kind, command):
    monkeypatch.setenv("SLURM_CONF", "/nonexistent/slurm.conf")
    path, fragment = _paths(tmp_path)[kind]
    argv = {
        "validate": ["site", "validate", str(path)],
        "show": ["site", "show", str(path)],
        "export": ["site", "export", str(path), "-f", "gres"],
        "plan": ["plan", "--site", str(path), "--nodelist", "n0"],
        "submit": ["--site", str(path), "--dry-run", "--jobs-dir", str(tmp_path), "t.py"],
    }[command]
    assert main(argv) == 2
    line = assert_one_line(capsys.readouterr().err, "", fragment)
    assert "unknown site" not in line
    if len(str(path)) < 80:
        assert str(path) in line


def test_long_site_name_is_one_short_line(capsys):
    assert main(["site", "validate", "y" * 5000]) == 2
    line = assert_one_line(capsys.readouterr().err, "", "file name is too long")
    assert len(line) < 300


# -- every name field, every kind YAML reads that is not text -----------------------------------
NAME_FIELDS = [
    (NAME, "name: {v}"),
    (VENDOR, "vendor: {v}"),
    (SN0_NAME, "  - name: {v}"),
    (SN1_NODES, "    nodes: {v}"),
    (GTYPE, "  gres_type: {v}"),
    (GFILE, "  gres_file: {v}"),
    (NICS, "  nics: {{socket_ifname: {v}, hcas: [mlx5_0, mlx5_1]}}"),
    (NICS, "  nics: {{socket_ifname: eth0, hcas: {v}}}"),
    (NICS, "  nics: {{socket_ifname: eth0, hcas: [mlx5_0, {v}]}}"),
    (L_SN, "  supernode: {{bandwidth_GBps: 200, latency_us: 4, kind: {v}}}"),
    (PART, "  partition: {v}"),
    (STRAT, "  strategy: {v}"),
    (SPINE, "  spine_switch: {v}"),
    (GNAME, "  gres_name: {v}"),
    (SNPARTS, "  supernode_partitions: {v}"),
    (SNPARTS, "  supernode_partitions: [main, {v}]"),
    (NOPTS, "  node_options: {{{v}: localhost}}"),
    (ENV_DEFAULT, "  {v}: {{NCCL_DEBUG: INFO}}"),
    (ENV_DEFAULT, "  default: {{{v}: INFO}}"),
    (JOBS_DIR, "  jobs_dir: {v}"),
    (0, "doctor: {{checkpoint_dir: {v}}}"),
    (0, "host_ip: {{nodes: {{n0: {v}}}}}"),
    (0, "host_ip: {{nodes: {{{v}: 10.0.0.1}}}}"),
    (0, "host_ip: {v}"),
    (0, "node_overrides: [{{nodes: {v}, cpus: 8}}]"),
]
NOT_TEXT = {"integer": "5", "number": "1.5", "boolean": "True", "null": "~", "date": "2024-01-01"}


@pytest.mark.parametrize("kind", NOT_TEXT)
@pytest.mark.parametrize(("line", "text"), NAME_FIELDS, ids=[t for _, t in NAME_FIELDS])
def test_every_name_field_refuses_values_that_are_not_text(tmp_path, capsys, line, text, kind):
    value = NOT_TEXT[kind]
    case = c("sweep", line, text.format(v="^" + value), "")
    content, loc = case.render()
    path = tmp_path / "site.yaml"
    path.write_text(content)
    assert main(["site", "validate", str(path)]) == 2
    got = "null" if kind == "null" else f"{kind} {value}"
    line_text = assert_one_line(capsys.readouterr().err, f"{path}:{loc[0]}:{loc[1]}: ", "")
    assert ": expected " in line_text and f", got {got} (hint: " in line_text, line_text
    # the same value quoted is a name
    if kind != "null":
        quoted, _ = c("sweep", line, text.format(v=f'^"{value}"'), "").render()
        _, problems = parse_site(quoted, "t.yaml")
        assert not any("expected" in p.message for p in problems), problems
