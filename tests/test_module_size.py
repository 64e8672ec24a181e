"""The module-size limit of `make lint` (contrib/lint/module_size.py) finds what it should."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "contrib" / "lint" / "module_size.py"
spec = importlib.util.spec_from_file_location("module_size", SCRIPT)
assert spec is not None and spec.loader is not None
module_size = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module_size)


def _package(tmp_path: Path, files: dict[str, int]) -> Path:
    package = tmp_path / "slurm_supernode"
    for rel, lines in files.items():
        path = package / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n" * lines)
    return package


def test_the_package_keeps_the_limit() -> None:
    assert module_size.main(["module_size.py"]) == 0


def test_a_long_module_and_an_exception_past_its_ceiling_are_found(tmp_path: Path) -> None:
    limit = module_size.LIMIT
    ceiling = module_size.EXCEPTIONS["placement/optimum.py"][0]
    package = _package(
        tmp_path,
        {"runtime/short.py": limit, "runtime/long.py": limit + 1, "placement/optimum.py": ceiling},
    )
    found = module_size.oversized(package)
    assert f"slurm_supernode/runtime/long.py: {limit + 1} lines > {limit}" in found
    assert not any("short.py" in line or "optimum.py" in line for line in found)
    (package / "placement" / "optimum.py").write_text("x = 1\n" * (ceiling + 1))
    assert any("placement/optimum.py" in line for line in module_size.oversized(package))


def test_an_exception_for_a_module_that_is_gone_is_named(tmp_path: Path) -> None:
    package = _package(tmp_path, {"runtime/short.py": 3})
    found = module_size.oversized(package)
    assert "slurm_supernode/cli/submit.py: named in EXCEPTIONS, no such module (remove it)" in found
