"""`snrun health`: check this node; Nagios exit codes; drain / resume it through Slurm.

Usable as Slurm's HealthCheckProgram or in a prolog (fast, no torch unless --allreduce).
Exit 0 ok, 1 warning, 2 critical, 3 unknown. With --drain a critical node is drained with
reason ``snrun: ...``; with --resume-ok a passing node drained with that prefix is resumed,
never one drained for another reason (NHC's convention).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from slurm_supernode.cli.options import non_negative, number, positive, refuse_if
from slurm_supernode.jobenv import JobEnvironment, SnrunSettings


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
    act = p.add_mutually_exclusive_group()
    act.add_argument("--drain", action="store_true", help="drain the node when critical")
    act.add_argument(
        "--resume-ok", action="store_true", help="resume the node if it passes and snrun drained it"
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")


def _site(arg: str | None):
    from slurm_supernode.site.loader import load_site

    if arg is None and not SnrunSettings.from_environ().site:
        return None
    return load_site(arg)


def run(ns: argparse.Namespace) -> int:
    from slurm_supernode.errors import InputError
    from slurm_supernode.health import checks
    from slurm_supernode.health.probe import HealthOptions, run_checks

    if ns.path and ns.min_free_gb is None:
        raise InputError("needs --min-free-gb", where="--path", hint="e.g. --min-free-gb 10")
    for dest, option in (
        ("allreduce_backend", "--allreduce-backend"),
        ("allreduce_nproc", "--allreduce-nproc"),
        ("timeout", "--timeout"),
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
    site = _site(ns.site)
    node = ns.node or JobEnvironment.from_environ().hostname()
    opts = HealthOptions(
        node=node,
        expect_devices=ns.expect_devices,
        min_free_gb=ns.min_free_gb,
        paths=tuple(ns.path),
        allreduce=ns.allreduce,
        allreduce_backend=ns.allreduce_backend,
        allreduce_nproc=ns.allreduce_nproc,
        timeout=ns.timeout,
    )
    results = run_checks(site, opts)
    status = checks.overall_status(results)
    action = None
    if ns.drain or ns.resume_ok:
        action = _act(node, status, results, drain=ns.drain, resume_ok=ns.resume_ok)
    if ns.json:
        print(json.dumps({"node": node, "status": status, "status_name":
                          checks.STATUS_NAMES[status], "action": action,
                          "checks": [asdict(r) for r in results]}, indent=1))  # fmt: skip
    else:
        worst = [r for r in results if r.status == status] or results
        summary = "; ".join(f"{r.name}: {r.message}" for r in worst[:3])
        print(f"SNRUN HEALTH {checks.STATUS_NAMES[status]} - {node}: {summary}")
        for r in results:
            print(f"  {r.status_name:<8} {r.name:<11} {r.message}")
        if action:
            print(f"  action: {action} {node}")
    return status


def _act(node: str, status: int, results, *, drain: bool, resume_ok: bool) -> str | None:
    """Drain or resume through the Slurm layer; returns what was done."""
    from slurm_supernode.errors import InputError
    from slurm_supernode.health import checks
    from slurm_supernode.slurm import nodes

    infos = nodes.node_infos(node)
    if not infos:
        raise InputError(f"Slurm has no node {node!r}", where="--node")
    info = infos[0]
    action = checks.node_action(status, info.drained, info.reason, drain=drain, resume_ok=resume_ok)
    if action == "drain":
        nodes.drain(node, checks.drain_reason(results))
    elif action == "resume":
        nodes.resume(node)
    elif status == checks.CRITICAL and drain and info.drained:
        print(f"snrun: {node} already drained ({info.reason}): reason kept", file=sys.stderr)
    return action
