"""The six steps' verdicts: pure functions of the gathered facts and the site.

Each step turns facts into ``Finding``s: what was measured, what the site says to expect,
ok / warn / fail (or unknown when it could not be checked, n/a when it does not apply) and
the next thing to check. Slow parts are found by comparing peers (a node, a node pair, a
super node against the median of its kind, the site's ``doctor.slow_pct``); node pairs are
measured in two pairings, so a node slow in both is named rather than the pair (bisection).

One file per step (step_device, step_comm, step_bandwidth, step_topology, step_storage),
the shared helpers in verdicts.py; this module runs them in order.
"""

from __future__ import annotations

from collections.abc import Sequence

from slurm_supernode.doctor.model import DoctorFacts, DoctorReport, Finding
from slurm_supernode.doctor.step_bandwidth import bandwidth_step
from slurm_supernode.doctor.step_comm import cross_step, intra_step
from slurm_supernode.doctor.step_device import device_step
from slurm_supernode.doctor.step_storage import storage_step
from slurm_supernode.doctor.step_topology import topology_step
from slurm_supernode.site.model import Site

STEP_FUNCTIONS = (device_step, intra_step, cross_step, bandwidth_step, topology_step, storage_step)


def evaluate(site: Site, facts: DoctorFacts, *, extra: Sequence[Finding] = ()) -> DoctorReport:
    """The whole checklist from the facts (``extra``: the login node's findings)."""
    findings = list(extra)
    for step in STEP_FUNCTIONS:
        findings += step(site, facts, site.doctor)
    order = {
        s: i for i, s in enumerate(("device", "intra", "cross", "bandwidth", "topology", "storage"))
    }
    findings.sort(key=lambda f: order[f.step])
    hosts = tuple(dict.fromkeys(r.host for r in facts.ranks))
    return DoctorReport(
        site=site.name, job_id=facts.job_id, hosts=hosts, findings=tuple(findings), time=facts.time
    )
