"""Step 4, bandwidth against the spec: each scope's busbw at its largest message against
the bandwidth the site gives its link level (``doctor.bandwidth_warn`` / ``bandwidth_fail``)."""

from __future__ import annotations

import statistics

from slurm_supernode.doctor.model import SKIP, DoctorFacts, Finding
from slurm_supernode.doctor.verdicts import largest, size_text
from slurm_supernode.health.checks import CRITICAL, OK, UNKNOWN, WARNING
from slurm_supernode.site.model import DoctorSettings, Site

# Bench scope -> the site's link level it measures.
SCOPE_LEVEL = {
    "node": "node",
    "pairs": "supernode",
    "pairs_shift": "supernode",
    "supernode": "supernode",
    "inter": "inter",
}


def bandwidth_step(site: Site, facts: DoctorFacts, cfg: DoctorSettings) -> list[Finding]:
    results = facts.bench.group_results if facts.bench else ()
    out = []
    for scope in ("node", "pairs", "inter"):
        groups = largest(results, scope)
        level = SCOPE_LEVEL[scope]
        link = site.links.get(level)
        if not groups or link is None:
            continue
        busbw = statistics.median(g.busbw for g in groups)
        spec = f"links.{level}: {link.bandwidth_GBps:g} GB/s ({link.kind or level})"
        expected = (
            f">= {cfg.bandwidth_warn:g} of {spec} (warn below), >= "
            f"{cfg.bandwidth_fail:g} (fail below)"
        )
        measured = f"{scope}: all_reduce {size_text(groups[0].size)} busbw {busbw:.2f} GB/s"
        if facts.backend != "nccl":
            out.append(
                Finding(
                    "bandwidth",
                    level,
                    UNKNOWN,
                    f"{measured} over {facts.backend} "
                    "on CPUs: not comparable with the device links",
                    expected=spec,
                    next="run on GPUs (nccl) to compare with the site's links",
                )
            )
            continue
        ratio = busbw / link.bandwidth_GBps
        status = (
            OK
            if ratio >= cfg.bandwidth_warn
            else (WARNING if ratio >= cfg.bandwidth_fail else CRITICAL)
        )
        out.append(
            Finding(
                "bandwidth",
                level,
                status,
                f"{measured} = {ratio:.2f} of the spec",
                expected=expected,
                next=""
                if status == OK
                else "nccl-tests all_reduce_perf at 1G-4G on "
                "the same nodes; NCCL_DEBUG=INFO (transport, channels); the link "
                "figures in the site file",
            )
        )
    if not out:
        out.append(Finding("bandwidth", "links", SKIP, "no scope measured"))
    return out
