"""Prometheus series of one node's health check (``snrun health --prom``): each check's
status and the node's, written by ``promfile`` into the node's textfile (node_exporter's
textfile collector) beside what other snrun commands wrote there."""

from __future__ import annotations

from collections.abc import Sequence

from slurm_supernode.health.checks import CheckResult
from slurm_supernode.promfile import Family, Scope, family, labels

PREFIX = "snrun_health_"


def scope(node: str) -> Scope:
    """A check of one node owns that node's health series (the next check replaces them)."""
    return Scope(PREFIX, labels(node=node))


def prom_families(
    node: str, status: int, results: Sequence[CheckResult], when: float, action: str | None
) -> list[Family]:
    at = labels(node=node)
    worst: dict[str, int] = {}  # one series per check: `disk` runs once per --path
    for r in results:
        worst[r.name] = max(worst.get(r.name, r.status), r.status)
    return [
        family("snrun_health_status", "Worst check: 0 ok, 1 warning, 2 critical, 3 unknown",
               [(at, status)]),
        family("snrun_health_check_status", "Each check: 0 ok, 1 warning, 2 critical, "
               "3 unknown (the worst of a check run per path)",
               [(at + labels(check=name), status) for name, status in worst.items()]),
        family("snrun_health_drained_by_check", "1 when this run drained the node",
               [(at, int(action == "drain"))]),
        family("snrun_health_last_run_timestamp_seconds", "When the checks ran (unix time)",
               [(at, when)]),
    ]  # fmt: skip
