"""Node health from Python: run the checks on a node, and drain or resume it through Slurm
(NHC's convention: drain on critical, resume only a node snrun drained). ``snrun health``
parses its arguments, calls ``check_node`` and prints the outcome."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slurm_supernode.api.checked import checked
from slurm_supernode.health.probe import HealthOptions
from slurm_supernode.jobenv import JobEnvironment
from slurm_supernode.user_settings import SnrunSettings

if TYPE_CHECKING:
    from slurm_supernode.health.checks import CheckResult
    from slurm_supernode.site.model import Site

__all__ = [
    "HealthOptions",
    "HealthOutcome",
    "act_on_node",
    "check_node",
    "load_optional_site",
    "write_prom",
]


@dataclass(frozen=True)
class HealthOutcome:
    """The node's checks, their worst status, and what was done to the node."""

    node: str
    status: int  # 0 ok, 1 warning, 2 critical, 3 unknown (Nagios)
    results: tuple[CheckResult, ...]
    action: str | None = None  # "drain" or "resume" when one was done
    note: str | None = None  # why nothing was done when one was asked (e.g. reason kept)

    @property
    def status_name(self) -> str:
        from slurm_supernode.health.checks import STATUS_NAMES

        return STATUS_NAMES[self.status]

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "status": self.status,
            "status_name": self.status_name,
            "action": self.action,
            "checks": [dataclasses.asdict(r) for r in self.results],
        }


def load_optional_site(site: str | None) -> Site | None:
    """The site (name or file, default ``$SNRUN_SITE``); None when neither is given."""
    from slurm_supernode.site.loader import load_site

    if site is None and not SnrunSettings.from_environ().site:
        return None
    return load_site(site)


@checked
def check_node(
    options: HealthOptions,
    *,
    site: str | None = None,
    drain: bool = False,
    resume_ok: bool = False,
) -> HealthOutcome:
    """Run the checks of ``options`` (node "": this host); with ``drain`` a critical node is
    drained (reason ``snrun: ...``), with ``resume_ok`` a passing node snrun drained is
    resumed. A node drained for another reason keeps it. With ``options.container`` the
    all-reduce runs in that image (``api/health_image.py``), the other checks on the host."""
    from slurm_supernode.errors import InputError
    from slurm_supernode.health import checks
    from slurm_supernode.health.probe import run_checks

    if drain and resume_ok:
        raise InputError("drain or resume, not both", where="--drain", hint="drop --resume-ok")
    if options.paths and options.min_free_gb is None:
        raise InputError("needs --min-free-gb", where="--path", hint="e.g. --min-free-gb 10")
    if options.container.wanted_image() is not None and not options.allreduce:
        raise InputError(
            "only the all-reduce runs in an image, and it was not asked for: the node checks "
            "look at the host",
            where="--container-image",
            hint="add --allreduce, or drop --container-image",
        )
    if not options.node:
        options = dataclasses.replace(options, node=JobEnvironment.from_environ().hostname())
    loaded = load_optional_site(site)
    results = tuple(run_checks(loaded, options))
    if options.allreduce and options.container.image is not None:
        from slurm_supernode.api.health_image import allreduce_in_image

        results += (allreduce_in_image(loaded, options),)
    outcome = HealthOutcome(options.node, checks.overall_status(results), results)
    if drain or resume_ok:
        return act_on_node(outcome, drain=drain, resume_ok=resume_ok)
    return outcome


def act_on_node(outcome: HealthOutcome, *, drain: bool, resume_ok: bool) -> HealthOutcome:
    """Drain or resume ``outcome.node`` through the Slurm layer as its status says."""
    from slurm_supernode.errors import InputError
    from slurm_supernode.health import checks
    from slurm_supernode.slurm import nodes

    node, status = outcome.node, outcome.status
    infos = nodes.node_infos(node)
    if not infos:
        raise InputError(f"Slurm has no node {node!r}", where="--node")
    info = infos[0]
    action = checks.node_action(status, info.drained, info.reason, drain=drain, resume_ok=resume_ok)
    note = None
    if action == "drain":
        nodes.drain(node, checks.drain_reason(outcome.results))
    elif action == "resume":
        nodes.resume(node)
    elif status == checks.CRITICAL and drain and info.drained:
        note = f"{node} already drained ({info.reason}): reason kept"
    return dataclasses.replace(outcome, action=action, note=note)


def write_prom(outcome: HealthOutcome, path: str) -> None:
    """Merge the node's health series into the Prometheus textfile ``path`` (the node's own
    series replaced, every other series of the file kept)."""
    import time

    from slurm_supernode.fsutil import check_output_path
    from slurm_supernode.health.prom import prom_families, scope
    from slurm_supernode.promfile import write_textfile

    check_output_path(path, "--prom")
    families = prom_families(outcome.node, outcome.status, outcome.results, time.time(),
                             outcome.action)  # fmt: skip
    write_textfile(path, families, scope(outcome.node))
