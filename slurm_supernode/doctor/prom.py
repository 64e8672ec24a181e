"""Prometheus series of a doctor verdict (``snrun doctor --prom``): the overall and per-step
verdicts and the failing findings of one site, written by ``promfile`` into the textfile
beside the bench report's and the health check's series (the doctor's bandwidth figures are
the bench report's, ``kind="doctor"``)."""

from __future__ import annotations

from slurm_supernode.doctor.model import STEPS, DoctorReport
from slurm_supernode.promfile import Family, Scope, family, labels

PREFIX = "snrun_doctor_"


def scope(site: str) -> Scope:
    """A doctor run owns its site's doctor series (the next run replaces them)."""
    return Scope(PREFIX, labels(site=site))


def prom_families(report: DoctorReport) -> list[Family]:
    site = labels(site=report.site)
    worst = max(report.status, 0)
    per_step = [(site + labels(step=s), max(report.step_status(s), 0)) for s in STEPS]
    failing = [
        (site + labels(step=s), sum(f.step == s and f.status == 2 for f in report.findings))
        for s in STEPS
    ]
    return [
        family("snrun_doctor_status", "Doctor verdict: 0 ok, 1 warn, 2 fail, 3 unknown",
               [(site, worst)]),
        family("snrun_doctor_step_status", "Verdict of each step: 0 ok (or n/a), 1 warn, "
               "2 fail, 3 unknown", per_step),
        family("snrun_doctor_failed_findings", "Findings of each step that fail", failing),
        family("snrun_doctor_nodes", "Nodes the doctor looked at", [(site, len(report.hosts))]),
        family("snrun_doctor_last_run_timestamp_seconds", "When the facts were gathered "
               "(unix time)", [(site, report.time)]),
    ]  # fmt: skip
