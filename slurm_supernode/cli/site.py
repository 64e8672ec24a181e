"""`snrun site validate|show|export|list`: argument parsing for the site tools.

Validation prints every problem as ``FILE:LINE:COL: message (hint: ...)`` and exits 2; good
files print ``FILE: ok (N super nodes, M nodes, D devices)``. Exports go to stdout or, with
``-o``, to a file written atomically.
"""

from __future__ import annotations

import argparse
import sys

from slurm_supernode.cli.options import int_range
from slurm_supernode.errors import InputError

HEALTH_CHECK = "health-check"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from slurm_supernode.site.export import EXPORTERS

    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = sub.add_parser("validate", help="check site configs; every problem with file:line:col")
    p.add_argument("files", nargs="+", metavar="FILE", help="site config (path or site name)")
    p = sub.add_parser("show", help="print super nodes, racks, nodes, devices, links")
    p.add_argument("file", metavar="FILE", help="site config (path or site name)")
    p = sub.add_parser("export", help="generate Slurm config fragments or JSON")
    p.add_argument("file", metavar="FILE", help="site config (path or site name)")
    p.add_argument(
        "--format",
        "-f",
        required=True,
        choices=[*EXPORTERS, HEALTH_CHECK],
        dest="fmt",
        help="what to export (health-check: the HealthCheckProgram wrapper for slurmd)",
    )
    p.add_argument("-o", "--output", metavar="OUT", help="write here (atomically), not stdout")
    p.add_argument(
        "--node-port-base",
        type=int_range(1, 65535),
        metavar="N",
        help="slurm-nodes: add Port=N+i per node in physical order (several slurmd per host)",
    )
    p.add_argument(
        "--slurm-version",
        metavar="X.Y",
        help="write for this Slurm (e.g. 23.11: BlockLevels, 24.11: no topology.yaml); default:"
        " the installed Slurm's version, else the newest syntax",
    )
    p.add_argument(
        "--python",
        metavar="PATH",
        help="health-check: the python that runs snrun on the nodes (default: this one)",
    )
    p.add_argument("--snrun", metavar="PATH", help="health-check: run this snrun program instead")
    p.add_argument(
        "--health-args",
        metavar="ARGS",
        default="",
        help="health-check: check options of both calls, e.g. '--min-free-gb 20 --path /tmp'",
    )
    sub.add_parser("list", help="list the installed site configs")


def run(args: argparse.Namespace) -> int:
    return {"validate": _validate, "show": _show, "export": _export, "list": _list}[args.action](
        args
    )


def _validate(args: argparse.Namespace) -> int:
    from slurm_supernode.site.finder import find_site
    from slurm_supernode.site.loader import load_file

    status = 0
    for arg in args.files:
        try:
            path = find_site(arg)
        except InputError as exc:
            print(str(exc) if exc.where else f"{arg}: {exc}", file=sys.stderr)
            status = 2
            continue
        site, problems = load_file(path)
        if problems or site is None:
            for p in problems:
                print(p, file=sys.stderr)
            status = 2
        else:
            print(
                f"{path}: ok ({len(site.supernodes)} super nodes, {len(site.nodes)} nodes,"
                f" {site.devices} devices)"
            )
    return status


def _load(arg: str):
    from slurm_supernode.site.loader import load_site

    return load_site(arg)


def _show(args: argparse.Namespace) -> int:
    from slurm_supernode.site.show import print_site

    print_site(_load(args.file))
    return 0


def _export(args: argparse.Namespace) -> int:
    from slurm_supernode.fsutil import check_output_path, write_atomic
    from slurm_supernode.site.export import export, export_warnings

    if args.output:
        check_output_path(args.output, "-o/--output")
    for dest, option in (("python", "--python"), ("snrun", "--snrun"),
                         ("health_args", "--health-args")):  # fmt: skip
        if getattr(args, dest) and args.fmt != HEALTH_CHECK:
            raise InputError(f"only applies to --format {HEALTH_CHECK}", where=option)
    site = _load(args.file)
    if args.fmt == HEALTH_CHECK:
        return _export_health_check(args, site)
    target = _target(args.slurm_version)
    text = export(site, args.fmt, args.node_port_base, target)
    for warning in export_warnings(site, args.fmt, target):
        print(f"snrun site export: warning: {warning}", file=sys.stderr)
    if args.output:
        try:
            write_atomic(args.output, text)
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror or exc}", where=args.output) from None
    else:
        sys.stdout.write(text)
    return 0


def _export_health_check(args: argparse.Namespace, site) -> int:
    import shlex

    from slurm_supernode.api.health_check import health_check_script
    from slurm_supernode.fsutil import write_atomic

    _check_health_args(args.health_args)
    text, notes = health_check_script(
        site, python=args.python, snrun=args.snrun, health_args=args.health_args
    )
    for note in notes:
        print(f"snrun site export: note: {note}", file=sys.stderr)
    if not args.output:
        sys.stdout.write(text)
        return 0
    try:
        write_atomic(args.output, text, mode=0o755)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", where=args.output) from None
    out = shlex.quote(str(args.output))
    print(f"wrote {args.output}; in slurm.conf: HealthCheckProgram={args.output} (then "
          f"'scontrol reconfigure'); try it on a node first: SLURMD_NODENAME=NODE {out}",
          file=sys.stderr)  # fmt: skip
    return 0


def _check_health_args(text: str) -> None:
    """--health-args must be options `snrun health` takes (checked by its own parser)."""
    import contextlib
    import io
    import shlex

    from slurm_supernode.cli import health

    parser = argparse.ArgumentParser(prog="snrun health", add_help=False, exit_on_error=False)
    health.add_arguments(parser)
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise InputError(f"cannot split: {exc}", where="--health-args") from None
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser.parse_args(argv)
    except (argparse.ArgumentError, SystemExit) as exc:
        why = str(exc) if isinstance(exc, argparse.ArgumentError) else err.getvalue().strip()
        last = why.splitlines()[-1] if why else text
        raise InputError(f"not options of snrun health: {last}", where="--health-args") from None


def _target(text: str | None):
    """--slurm-version, else the installed Slurm's (None when there is none to ask)."""
    from slurm_supernode.errors import SlurmError
    from slurm_supernode.site.export import SlurmTarget, parse_target

    if text is not None:
        return parse_target(text)
    from slurm_supernode.slurm.version import installed_version

    try:
        found = installed_version()
    except SlurmError:
        return None
    return SlurmTarget(found.major, found.minor)


def _list(args: argparse.Namespace) -> int:
    from slurm_supernode.site.finder import available_sites
    from slurm_supernode.site.loader import load_file

    sites = available_sites()
    if not sites:
        print("no site configs installed")
        return 0
    width = max(len(n) for n in sites)
    for name, path in sites.items():
        site, problems = load_file(path)
        if site is None or problems:
            summary = f"INVALID ({len(problems)} problems)"
        else:
            summary = (
                f"{site.vendor}, {len(site.supernodes)} super nodes, {len(site.nodes)} nodes,"
                f" {site.devices} devices, strategy {site.slurm.strategy}"
            )
        print(f"{name:<{width}}  {summary}  {path}")
    return 0
