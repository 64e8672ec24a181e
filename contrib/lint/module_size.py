"""Module-size limit of the package (run by `make lint`): a file holds one idea, and a long file
is the sign of two (docs/architecture.md, "Rules the code keeps").

Every module of ``slurm_supernode`` has at most ``LIMIT`` lines, but the named exceptions below,
each with its reason and a ceiling it may not grow past. Prints one line per module over its
limit (``path: N lines > limit``) and exits 1; exits 0 and prints nothing otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path

LIMIT = 450
# path (relative to the package) -> (ceiling, why it is longer than LIMIT)
EXCEPTIONS: dict[str, tuple[int, str]] = {
    "placement/optimum.py": (
        560,
        "the planner's branch and bound: one search with its bounds, kept in one piece on purpose "
        "(its hot path, perf/bench_plan.py)",
    ),
    "bench/collectives.py": (
        650,
        "the in-job measurement as one torch program (buffers, verification, timing, "
        "aggregation); not split yet",
    ),
    "cli/submit.py": (
        600,
        "snrun's own options (sbatch, placement, snrun, sweep, container groups) and their "
        "checks; not split yet",
    ),
    "site/build_supernodes.py": (
        540,
        "the builder of the site's node sections (one NodeReader subclass); not split yet",
    ),
}


def line_count(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for _ in fh)


def oversized(package: Path) -> list[str]:
    """One line per module over its limit, and per exception that names no module."""
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        limit = EXCEPTIONS.get(rel, (LIMIT, ""))[0]
        lines = line_count(path)
        if lines > limit:
            out.append(f"{package.name}/{rel}: {lines} lines > {limit}")
    for rel in sorted(
        set(EXCEPTIONS) - {p.relative_to(package).as_posix() for p in package.rglob("*.py")}
    ):
        out.append(f"{package.name}/{rel}: named in EXCEPTIONS, no such module (remove it)")
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[2]
    problems = oversized(root / "slurm_supernode")
    for line in problems:
        print(f"module-size: {line} (split it along its ideas; contrib/lint/module_size.py)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
