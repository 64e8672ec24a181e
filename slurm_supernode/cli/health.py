"""`snrun health`: check this node; Nagios exit codes; drain / resume it through Slurm
(argument parsing and printing; the checks and the drain are ``api/health.py``).

Usable as Slurm's HealthCheckProgram or in a prolog (fast, no torch unless --allreduce).
With --container-image the all-reduce runs in that image (in a job, for pyxis and Slurm OCI).
Exit 0 ok, 1 warning, 2 critical, 3 unknown. With --drain a critical node is drained with
reason ``snrun: ...``; with --resume-ok a passing node drained with that prefix is resumed,
never one drained for another reason (NHC's convention).
"""

from __future__ import annotations

import argparse
import json
import sys

from slurm_supernode.cli.options import non_negative, number, positive, refuse_if
from slurm_supernode.cli.submit import CONTAINER_OPTIONS, add_container_arguments, container_options


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Check this node's devices, vendor tools, IMEX, disk; drain or resume it."
    p.add_argument("--site", help="site name or file (default $SNRUN_SITE; optional)")
    p.add_argument("--node", help="node name (default $SLURMD_NODENAME, else the host name)")
    p.add_argument(
        "--expect-devices", type=non_negative, metavar="N", help="default: the site's count"
    )
    p.add_argument(
        "--min-free-gb", type=number(minimum=0), metavar="G", help="free space needed at --path"
    )
    p.add_argument(
        "--path", action="append", default=[], metavar="P", help="where jobs write (repeatable)"
    )
    p.add_argument("--allreduce", action="store_true", help="also a small all-reduce (torch)")
    p.add_argument("--allreduce-backend", choices=("auto", "nccl", "gloo"), default="auto")
    p.add_argument(
        "--allreduce-nproc", type=positive, metavar="N", help="default: devices (gloo: 2)"
    )
    p.add_argument(
        "--timeout",
        type=number(above=0, maximum=86400),
        default=30.0,
        help="all-reduce timeout (30 s)",
    )
    add_container_arguments(p, "the all-reduce runs in the image; the node checks on the host")
    act = p.add_mutually_exclusive_group()
    act.add_argument("--drain", action="store_true", help="drain the node when critical")
    act.add_argument(
        "--resume-ok", action="store_true", help="resume the node if it passes and snrun drained it"
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument(
        "--prom",
        metavar="OUT",
        help="merge the node's results into this Prometheus textfile (node_exporter's collector)",
    )


def run(ns: argparse.Namespace) -> int:
    from slurm_supernode.api.health import HealthOptions, check_node

    for dest, option in (
        ("allreduce_backend", "--allreduce-backend"),
        ("allreduce_nproc", "--allreduce-nproc"),
        ("timeout", "--timeout"),
        *CONTAINER_OPTIONS,
    ):
        refuse_if(
            ns,
            dest,
            option,
            None
            if ns.allreduce
            else "is a setting of the all-reduce check, and --allreduce was not given",
            f"add --allreduce, or drop {option}",
        )
    options = HealthOptions(
        node=ns.node or "",
        expect_devices=ns.expect_devices,
        min_free_gb=ns.min_free_gb,
        paths=tuple(ns.path),
        allreduce=ns.allreduce,
        allreduce_backend=ns.allreduce_backend,
        allreduce_nproc=ns.allreduce_nproc,
        timeout=ns.timeout,
        container=container_options(ns),
    )
    if ns.prom:
        from slurm_supernode.fsutil import check_output_path

        check_output_path(ns.prom, "--prom")  # before the checks drain anything
    outcome = check_node(options, site=ns.site, drain=ns.drain, resume_ok=ns.resume_ok)
    if ns.prom:
        from slurm_supernode.api.health import write_prom

        write_prom(outcome, ns.prom)
    if outcome.note:
        print(f"snrun: {outcome.note}", file=sys.stderr)
    if ns.json:
        print(json.dumps(outcome.to_dict(), indent=1))
        return outcome.status
    worst = [r for r in outcome.results if r.status == outcome.status] or list(outcome.results)
    summary = "; ".join(f"{r.name}: {r.message}" for r in worst[:3])
    print(f"SNRUN HEALTH {outcome.status_name} - {outcome.node}: {summary}")
    for r in outcome.results:
        print(f"  {r.status_name:<8} {r.name:<11} {r.message}")
    if outcome.action:
        print(f"  action: {outcome.action} {outcome.node}")
    return outcome.status
