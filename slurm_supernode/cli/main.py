"""`snrun` entry point: parse arguments, dispatch, print errors as one line.

`snrun [options] SCRIPT [ARGS...]` submits a job; `snrun SUBCOMMAND ...` runs a sub-command.
Each sub-command lives in its own module of this package, imported only when used, so the
login-node path stays light (no torch, no rich unless needed).
"""

from __future__ import annotations

import errno
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from slurm_supernode import __version__

if TYPE_CHECKING:
    import argparse

    from slurm_supernode.user_settings import SnrunSettings

# name -> (module under slurm_supernode.cli, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "submit": ("submit", "submit a torchrun job on whole super nodes (the default)"),
    "sweep": ("sweep", "a parameter grid as one job array of supervised job chains"),
    "plan": ("plan", "rank-to-device map and communication cost for an allocation"),
    "site": ("site", "validate, show and export site configs"),
    "status": ("status", "show the attempts of a job chain"),
    "cancel": ("cancel", "cancel a whole job chain"),
    "logs": ("logs", "per-rank logs of a job's attempts"),
    "metrics": ("metrics", "a job's figures now: devices, step time, communication, slow nodes"),
    "top": ("top", "a live view of a running job, per node"),
    "profile": ("profile", "ask a running job for a profiler window (communication share) now"),
    "attach": ("attach", "a shell, a command or a live stack dump on a node of a running job"),
    "bench": ("bench", "collective bandwidth benchmarks: run, submit, schedule, report"),
    "health": ("health", "node health checks; drain and resume nodes"),
    "doctor": ("doctor", "six-step checklist of a slow super node (device .. storage)"),
    "agent": ("agent", "(in a job) per-node agent: rank map, env, exec torchrun"),
    "supervise": ("supervise", "(in a job) batch-step supervisor around the agents"),
    "stacks": ("stacks", "(in a job) py-spy stack dumps of the ranks on this node"),
    "clusters": ("clusters", "the clusters of --cluster NAME: list them, check each over SSH"),
    "remote": ("remote_side", "(over SSH) the login node's side of --cluster"),
}


# OSError numbers that mean the user named a path that cannot be used (exit 2, bad input).
_BAD_PATH_ERRNOS = {
    errno.ENOENT,
    errno.ENOTDIR,
    errno.EISDIR,
    errno.ENAMETOOLONG,
    errno.ELOOP,
    errno.EEXIST,
    errno.EACCES,
}


def _load(name: str):
    module, _ = SUBCOMMANDS[name]
    return importlib.import_module(f"slurm_supernode.cli.{module}")


def _top_help() -> str:
    lines = [
        "usage: snrun [sbatch-like options] SCRIPT [ARGS...]",
        "       snrun SUBCOMMAND [options]",
        "",
        "Submit torchrun jobs on whole super nodes, and manage the site.",
        "",
        "sub-commands:",
    ]
    width = max(len(n) for n in SUBCOMMANDS)
    lines += [f"  {n:<{width}}  {h}" for n, (_, h) in SUBCOMMANDS.items()]
    lines += [
        "",
        "global options:",
        "  --version   print the version and exit",
        "  --debug     show Python tracebacks on errors, and debug lines (Slurm backend)",
        "  --cluster NAME  run the verb on cluster NAME's login node over SSH (default"
        " $SNRUN_CLUSTER; docs/remote.md)",
        "",
        "'snrun SUBCOMMAND --help' for the options of each; 'snrun submit --help' for job options.",
    ]
    return "\n".join(lines)


def _prog(name: str) -> str:
    return f"snrun {name}" if name != "submit" else "snrun"


def build_parser(name: str) -> argparse.ArgumentParser:
    """The parser of one sub-command (used by tests and the docs); its errors are one line."""
    from slurm_supernode.cli.options import Parser

    mod = _load(name)
    parser = Parser(prog=_prog(name))
    mod.add_arguments(parser)
    return parser


def _own_args(name: str, args: list[str], parser: argparse.ArgumentParser) -> int:
    """How many leading arguments are snrun's own; the rest belong to the program run.

    ``snrun train.py --debug`` keeps ``--debug`` for the script, and so does
    ``snrun supervise --job-dir D -- train.py --debug``.
    """
    if name in ("submit", "sweep"):
        from slurm_supernode.cli.submit import split_argv

        return len(split_argv(parser, args)[0])
    return args.index("--") if "--" in args else len(args)


# verbs that SNRUN_CLUSTER leaves here (in a job, or about the clusters themselves)
_HERE_ONLY = ("clusters", "remote", "agent", "supervise", "stacks")


def _front(
    args: list[str], settings: SnrunSettings
) -> tuple[bool, str | None, bool, list[str]] | int:
    """The options before the verb, or the exit code where nothing else is to be done
    (``--help``, ``--version``, no verb, a ``--cluster`` without a name)."""
    from slurm_supernode.errors import SnrunError

    try:
        front = _front_options(args, settings)
    except SnrunError as exc:
        print(f"snrun: error: {exc}", file=sys.stderr)
        return exc.exit_code
    rest = front[3]
    if not rest or rest[0] in ("-h", "--help"):
        print(_top_help())
        return 0 if rest else 2
    if rest[0] == "--version":
        print(f"snrun {__version__}")
        return 0
    return front


def _on_cluster(cluster: str, name: str, rest: list[str], debug: bool) -> int:
    """``snrun --cluster NAME VERB ...``: the verb run by the cluster's snrun (cli/remote.py)."""
    if debug:
        _show_debug_log()
    from slurm_supernode.cli.remote import run_remote

    return run_remote(cluster, name, rest)


def _front_options(
    args: list[str], settings: SnrunSettings
) -> tuple[bool, str | None, bool, list[str]]:
    """``--debug`` and ``--cluster NAME`` before the verb: (debug, cluster, named on the
    command line, the rest). ``--cluster`` wins over ``$SNRUN_CLUSTER``."""
    debug, cluster, named = settings.debug, settings.cluster, False
    while args:
        if args[0] == "--debug":
            debug, args = True, args[1:]
        elif args[0].startswith("--cluster="):
            cluster, args, named = args[0].split("=", 1)[1], args[1:], True
        elif args[0] == "--cluster":
            if len(args) < 2 or args[1].startswith("-"):
                from slurm_supernode.errors import InputError

                raise InputError("needs a cluster name", where="--cluster")
            cluster, args, named = args[1], args[2:], True
        else:
            break
    return debug, cluster or None, named, args


def _show_debug_log() -> None:
    """--debug: the layers' debug lines (e.g. which Slurm backend answers, and why) on stderr."""
    import logging

    logger = logging.getLogger("slurm_supernode")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("snrun: debug: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)


def main(argv: Sequence[str] | None = None) -> int:
    from slurm_supernode.errors import SnrunError
    from slurm_supernode.user_settings import SnrunSettings

    args = list(sys.argv[1:] if argv is None else argv)
    front = _front(args, SnrunSettings.from_environ())
    if isinstance(front, int):  # help, version, or a bad --cluster: done
        return front
    debug, cluster, named, args = front
    name = args[0] if args[0] in SUBCOMMANDS else "submit"
    rest = args[1:] if args[0] in SUBCOMMANDS else args
    prog = _prog(name)
    from slurm_supernode.cli.options import explicit_options

    try:
        if cluster and (named or name not in _HERE_ONLY):  # the verb runs there
            return _on_cluster(cluster, name, rest, debug)
        parser = build_parser(name)  # once: building the run verb's parser is not free
        own = _own_args(name, rest, parser)
        if "--debug" in rest[:own]:
            debug = True
            rest = [a for a in rest[:own] if a != "--debug"] + rest[own:]
        if debug:
            _show_debug_log()
        mod = _load(name)
        ns = mod.parse(parser, rest) if hasattr(mod, "parse") else parser.parse_args(rest)
        # the same parser, its defaults suppressed now that the real parse is done
        ns.explicit = explicit_options(parser, rest[:own] if name in ("submit", "sweep") else rest)
        if isinstance(getattr(ns, "action", None), str):  # snrun site export, snrun bench run
            prog = f"{prog} {ns.action}"
        from slurm_supernode.api.wording import command_line

        with command_line():  # the API's errors keep the options' names here
            return int(mod.run(ns) or 0)
    except SnrunError as exc:
        if debug:
            raise
        for i, line in enumerate(str(exc).splitlines() or [""]):
            prog = getattr(exc, "prog", None) or prog
            print(f"{prog}: error: {line}" if i == 0 else line, file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # `snrun status | head -1`: the reader is gone; end quietly
        _drop_stdout()
        return 0
    except OSError as exc:  # a path the checks above did not foresee: still one line
        if debug:
            raise
        what = f"{exc.filename}: " if exc.filename else ""
        print(
            f"{prog}: error: {what}{exc.strerror or exc} (hint: check the path and its"
            " permissions)",
            file=sys.stderr,
        )
        return 2 if exc.errno in _BAD_PATH_ERRNOS else 1
    except KeyboardInterrupt:
        print("snrun: interrupted", file=sys.stderr)
        return 130


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush of what is still buffered
    does not fail again on the closed pipe (Python's advice for SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def entry() -> None:
    code = main()
    # The interpreter's last garbage collection, at exit, would walk every object this process
    # made (~300k: modules, functions, the site model) to free nothing that matters once it
    # ends: ~5% of a dry run's instructions (docs/benchmarks.md). Frozen, it skips them.
    gc.freeze()
    try:
        sys.stdout.flush()  # what print() left buffered goes out here, still inside snrun
    except BrokenPipeError:
        _drop_stdout()
    sys.exit(code)


if __name__ == "__main__":
    entry()
