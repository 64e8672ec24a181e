"""Step 1, the device baseline: each node's health checks (devices, driver) and its
compute rate against its peers and the site's floor."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from slurm_supernode.doctor.model import DoctorFacts, Finding, NodeFacts
from slurm_supernode.doctor.verdicts import NEXT_HEALTH, below_peers, hosts_text, peers_median
from slurm_supernode.health.checks import CRITICAL, OK, UNKNOWN, WARNING, CheckResult
from slurm_supernode.site.model import DoctorSettings, Site


def device_step(site: Site, facts: DoctorFacts, cfg: DoctorSettings) -> list[Finding]:
    out: list[Finding] = []
    by_check: dict[str, list[tuple[str, CheckResult]]] = {}
    for node in facts.nodes:
        for c in node.health:
            if c.name != "imex":  # topology step
                by_check.setdefault(c.name, []).append((node.host, c))
    for name, items in by_check.items():
        bad = [(h, c) for h, c in items if c.status != OK]
        for host, c in bad:
            out.append(
                Finding(
                    "device",
                    name,
                    c.status,
                    c.message,
                    where=host,
                    next=NEXT_HEALTH.get(name, "snrun health on the node"),
                )
            )
        good = [h for h, c in items if c.status == OK]
        if good:
            sample = next(c for h, c in items if c.status == OK)
            out.append(Finding("device", name, OK, sample.message, where=hosts_text(good)))
    out += _driver_findings(site, facts.nodes)
    out += _compute_findings(site, facts, cfg)
    return out


def _driver_findings(site: Site, nodes: Sequence[NodeFacts]) -> list[Finding]:
    if site.vendor != "nvidia":
        return [Finding("device", "runtime", OK, f"torch {nodes[0].torch}" if nodes else "-")]
    no_driver = [n.host for n in nodes if not n.driver and not n.smi]
    if no_driver and len(no_driver) == len(nodes):
        return [
            Finding(
                "device",
                "driver",
                UNKNOWN,
                f"no NVIDIA driver (no /proc/driver/nvidia, no nvidia-smi) on "
                f"{hosts_text(no_driver)}: there are no GPUs here; device checks skipped",
                expected=f"site {site.name}: NVIDIA GPUs",
                next="run the doctor on GPU nodes (the local test cluster's devices are fake)",
                where=hosts_text(no_driver),
            )
        ]
    stacks: dict[tuple[str, str, str], list[str]] = {}
    for n in nodes:
        drv = n.driver or (n.smi[0].driver if n.smi else "")
        stacks.setdefault((drv or "none", n.torch, n.cuda), []).append(n.host)
    if len(stacks) == 1:
        (drv, torch, cuda), hosts = next(iter(stacks.items()))
        return [
            Finding(
                "device",
                "driver",
                OK,
                f"driver {drv}, torch {torch}, CUDA runtime {cuda or '-'}",
                where=hosts_text(hosts),
            )
        ]
    common = max(stacks.items(), key=lambda kv: len(kv[1]))[0]
    out = []
    for stack, hosts in stacks.items():
        if stack != common:
            out.append(
                Finding(
                    "device",
                    "driver",
                    WARNING,
                    f"driver {stack[0]}, torch {stack[1]}, CUDA {stack[2]}",
                    expected=f"the same as the other nodes (driver {common[0]}, "
                    f"torch {common[1]}, CUDA {common[2]})",
                    next="install the same driver and software on every node",
                    where=hosts_text(hosts),
                )
            )
    return out


def _compute_findings(site: Site, facts: DoctorFacts, cfg: DoctorSettings) -> list[Finding]:
    devs = [(r, r.device) for r in facts.ranks if r.device is not None]
    expected = (
        f"{cfg.min_tflops:g} TFLOPS bf16 per device"
        if cfg.min_tflops
        else (f"within {cfg.slow_pct:g}% of the other devices")
    )
    if not devs:
        return [_no_devices(site, facts, expected)]
    out = []
    for r, d in devs:
        if d.error or d.tflops is None:
            out.append(
                Finding(
                    "device",
                    "compute",
                    CRITICAL,
                    f"rank {r.rank} (GPU {d.index}): {d.error or 'no figure'}",
                    expected=expected,
                    where=r.host,
                    next="nvidia-smi -q on the node; snrun health --allreduce",
                )
            )
    rates = [(r, d) for r, d in devs if d.tflops is not None and not d.error]
    if rates:
        out += _rate_findings(facts, rates, cfg, expected)
    return out


def _no_devices(site: Site, facts: DoctorFacts, expected: str) -> Finding:
    """No device ran the compute check: why, in words."""
    what = (
        "NPUs: no compute check for Ascend yet"
        if site.vendor == "ascend"
        else (f"no GPUs: torch sees no CUDA device on any node (backend {facts.backend})")
    )
    return Finding(
        "device",
        "compute",
        UNKNOWN,
        what + "; compute check skipped",
        expected=expected,
        next="nvidia-smi on a node; is the driver loaded? torch.cuda.is_available()",
    )


def _rate_findings(
    facts: DoctorFacts, rates: list, cfg: DoctorSettings, expected: str
) -> list[Finding]:
    """Devices below the floor or their peers' median, and one summary line."""
    out = []
    median = statistics.median(d.tflops for _, d in rates)
    floor = cfg.min_tflops or 0
    slow = set(below_peers([d.tflops for _, d in rates], cfg.slow_pct))
    low = [(k, r, d) for k, (r, d) in enumerate(rates) if d.tflops < floor or k in slow]
    for k, r, d in low:
        out.append(
            Finding(
                "device",
                "compute",
                CRITICAL if d.tflops < floor else WARNING,
                f"rank {r.rank} ({d.name} {d.bus_id}): {d.tflops:.0f} TFLOPS bf16 "
                f"(median of the other devices "
                f"{peers_median([x.tflops for _, x in rates], k):.0f})",
                expected=expected,
                where=r.host,
                next="nvidia-smi -q -d CLOCK,PERFORMANCE,TEMPERATURE,POWER: "
                "throttling? dcgmi diag -r 2",
            )
        )
    clocks = sorted(
        {
            f"{g.sm_clock}/{g.max_sm_clock} MHz"
            for n in facts.nodes
            for g in n.smi
            if g.sm_clock is not None
        }
    )
    lo, hi = min(d.tflops for _, d in rates), max(d.tflops for _, d in rates)
    out.append(
        Finding(
            "device",
            "compute",
            OK if not low else WARNING,
            f"{len(rates)} devices: bf16 matmul {lo:.0f}-{hi:.0f} TFLOPS (median "
            f"{median:.0f})" + (f"; SM clocks {', '.join(clocks[:3])}" if clocks else ""),
            expected=expected,
            where=hosts_text(r.host for r, _ in rates),
        )
    )
    return out
