"""docs/architecture.md names every module of the package under its package, and only modules
that exist: the document stays true as modules are added, moved or removed."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "slurm_supernode"
DOC = ROOT / "docs" / "architecture.md"
ROOT_SECTION = "Root modules"
MODULE = re.compile(r"`([\w/]+\.py)`")


def sections(text: str) -> dict[str, str]:
    """The text under each ``### `pkg/``` heading (and ``### Root modules``), by its name."""
    parts = re.split(r"^### (.+)$", text, flags=re.M)
    out = {}
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        body = body.split("\n## ", 1)[0]
        out[heading.strip().strip("`").rstrip("/")] = body
    return out


def packages() -> list[str]:
    return sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))


def modules(package: str | None) -> set[str]:
    """A package's modules as the document names them: ``name.py``, or ``folder/name.py`` for a
    module in a plain folder of the package (no ``__init__.py``)."""
    if package is None:
        return {p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
    base = PACKAGE / package
    return {
        p.relative_to(base).as_posix()
        for p in base.rglob("*.py")
        if p.name != "__init__.py" and "__pycache__" not in p.parts
    }


def named(body: str, package: str | None) -> set[str]:
    """The modules a section names as its own: bare ``name.py`` or a path inside the package;
    ``other/name.py`` with another package's name is a reference (checked apart)."""
    others = set(packages()) - {package}
    return {m for m in MODULE.findall(body) if m.split("/", 1)[0] not in others | {"tests"}}


def problems(text: str) -> list[str]:
    out = []
    found = sections(text)
    for package in [None, *packages()]:
        title = ROOT_SECTION if package is None else package
        body = found.get(title)
        if body is None:
            out.append(f"no section '### {title}' for {package or 'the root modules'}")
            continue
        have, doc = modules(package), named(body, package)
        where = f"slurm_supernode/{package}/" if package else "slurm_supernode/"
        out += [f"{where}{m} is not named under '### {title}'" for m in sorted(have - doc)]
        out += [f"'### {title}' names {m}, no module of {where}" for m in sorted(doc - have)]
    for ref in sorted(set(MODULE.findall(text))):
        head = ref.split("/", 1)[0]
        if head in packages() and not (PACKAGE / ref).is_file():
            out.append(f"architecture.md names {ref}, which does not exist")
    return out


def test_every_module_is_named_under_its_package_and_every_named_module_exists() -> None:
    assert problems(DOC.read_text()) == []


def test_a_missing_or_invented_module_is_found() -> None:
    text = DOC.read_text()
    gone = text.replace("`supervisor_config.py`", "`supervisor-config`")
    assert "slurm_supernode/runtime/supervisor_config.py is not named under '### runtime'" in (
        problems(gone)
    )
    invented = text.replace("`preflight.py`", "`preflight.py`, `no_such_module.py`")
    assert any("no_such_module.py" in p for p in problems(invented))
    assert any("runtime/no_such.py" in p for p in problems(text + "\n`runtime/no_such.py`\n"))
    without = re.sub(r"^### `chain/`$", "### chain-less", text, flags=re.M)
    assert "no section '### chain' for chain" in problems(without)
