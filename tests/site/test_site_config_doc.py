"""Every key the site loader accepts is in docs/site-config.md's annotated examples.

The schema is read from the builders' own key tuples (the ones ``NodeReader.mapping`` checks
keys against), and a scan of the builders makes sure no section is checked against a tuple
this test does not know: a new key or a new section without documentation fails here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml

from slurm_supernode.site import (
    build_settings,
    build_supernodes,
    builder,
    containers,
    imex,
    ip_patterns,
    model,
)

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "site-config.md"
SITE_DIR = ROOT / "slurm_supernode" / "site"

# section path ("" = top, "[]" = list items) -> the keys the loader accepts there
LEVELS = (*model.LINK_LEVELS, model.CROSS_ISLAND)
SCHEMA: dict[str, tuple[str, ...]] = {
    "": builder.TOP_KEYS,
    "supernodes[]": build_supernodes.SN_KEYS,
    "supernodes[].racks[]": ("name", "nodes"),
    "node_defaults": build_supernodes.SPEC_KEYS,
    "node_defaults.nics": ("socket_ifname", "hcas"),
    "node_overrides[]": ("nodes",),
    "links": LEVELS,
    **{f"links.{level}": build_settings.LINK_KEYS for level in LEVELS},
    "slurm": build_settings.SLURM_KEYS,
    "bench": build_settings.BENCH_KEYS,
    "paths": build_settings.PATH_KEYS,
    "doctor": build_settings.DOCTOR_KEYS,
    "restarts": model.RESTART_CAUSES,
    "containers": containers.CONTAINER_KEYS,
    "imex_channels": imex.IMEX_KEYS,
    "observe": build_settings.OBSERVE_KEYS,
    "device_ips": ip_patterns.IP_KEYS,
    "host_ip": ip_patterns.IP_KEYS,
}
# the key arguments of every mapping() call in the builders that this test covers (free-form
# mappings pass None; the rest must be one of these)
KNOWN_ARGUMENTS = {
    "TOP_KEYS", "SN_KEYS", "SPEC_KEYS + extra", "('socket_ifname', 'hcas')",
    "('name', 'nodes')", "(*LINK_LEVELS, CROSS_ISLAND)", "LINK_KEYS + tuple(OLD_LINK_KEYS)",
    "SLURM_KEYS", "BENCH_KEYS", "PATH_KEYS", "DOCTOR_KEYS", "RESTART_CAUSES", "CONTAINER_KEYS",
    "IMEX_KEYS", "IP_KEYS", "OBSERVE_KEYS", "None", "scopes",
}  # fmt: skip


def documented_paths() -> set[str]:
    """Key paths of the page's YAML examples; a commented-out key near the left margin
    (``    # spares: 2``) counts: it documents an optional key."""
    paths: set[str] = set()
    for block in re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.S):
        text = re.sub(r"(?m)^( {0,8})# ([a-z_]+:)", r"\1\2", block)
        text = text.replace("...", "x")
        walk(yaml.safe_load(text), "", paths)
    return paths


def walk(value: object, path: str, paths: set[str]) -> None:
    if isinstance(value, list):
        for item in value:
            walk(item, f"{path}[]", paths)
    elif isinstance(value, dict):
        for key, sub in value.items():
            paths.add(f"{path}.{key}" if path else str(key))
            walk(sub, f"{path}.{key}" if path else str(key), paths)


def test_every_accepted_key_is_in_the_page() -> None:
    documented = documented_paths()
    missing = [
        f"{section}.{key}" if section else key
        for section, keys in SCHEMA.items()
        for key in keys
        if (f"{section}.{key}" if section else key) not in documented
    ]
    assert not missing, f"keys the loader accepts but docs/site-config.md does not show: {missing}"


def test_the_schema_here_is_the_loaders() -> None:
    calls = []
    for path in sorted(SITE_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "mapping"
            ):
                calls.append((path.name, ast.unparse(node.args[2])))
    assert len(calls) >= 15, calls
    unknown = [c for c in calls if c[1] not in KNOWN_ARGUMENTS]
    assert not unknown, f"a section this test does not know: {unknown}"


def test_a_key_missing_from_the_page_is_found(monkeypatch) -> None:
    monkeypatch.setitem(SCHEMA, "paths", (*build_settings.PATH_KEYS, "not_documented"))
    try:
        test_every_accepted_key_is_in_the_page()
    except AssertionError as exc:
        assert "paths.not_documented" in str(exc)
    else:
        raise AssertionError("an undocumented key passed")
