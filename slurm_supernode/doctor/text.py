"""The doctor's report as text: one summary line (Nagios-like, as ``snrun health``), then
each step with its findings, what the site expects and what to check next."""

from __future__ import annotations

from slurm_supernode.doctor.model import STEP_TITLES, STEPS, VERDICTS, DoctorReport
from slurm_supernode.health.checks import OK


def format_report(report: DoctorReport) -> str:
    status = report.status
    worst = [f for f in report.findings if f.status == status and status != OK]
    summary = (
        "; ".join(f"{f.step}: {f.where + ': ' if f.where else ''}{f.measured}" for f in worst[:2])
        or "all steps pass"
    )
    hosts = f"{len(report.hosts)} node(s)"
    lines = [
        f"SNRUN DOCTOR {VERDICTS[status].upper()} - site {report.site}, job "
        f"{report.job_id or '-'}, {hosts}: {summary}"
    ]
    for step in STEPS:
        lines.append(f"{STEP_TITLES[step]}: {VERDICTS[report.step_status(step)]}")
        for f in report.findings:
            if f.step != step:
                continue
            where = f" [{f.where}]" if f.where else ""
            lines.append(f"  {f.verdict:<7} {f.check:<15} {f.measured}{where}")
            if f.expected and f.status != OK:
                lines.append(f"  {'':<7} {'':<15} expected: {f.expected}")
            if f.next:
                lines.append(f"  {'':<7} {'':<15} next: {f.next}")
    return "\n".join(lines) + "\n"
