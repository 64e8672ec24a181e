"""`snrun attach JOB [--node HOST] [-- CMD]`: a shell or a command on a node of a running job."""

from __future__ import annotations

import argparse
import functools

from slurm_supernode.cli.options import add_job_argument, add_jobs_dir_arguments, job_dir_of


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Run a shell (default) or CMD on a node of the running job, beside its ranks "
        "(srun --jobid --overlap). --py-spy prints a live stack dump of the ranks instead."
    )
    add_job_argument(p)
    p.add_argument("--node", help="node to run on (default: the job's first node)")
    p.add_argument("--py-spy", action="store_true", help="live stack dump of the ranks")
    p.add_argument("--rank", type=int, action="append", help="with --py-spy: only this rank")
    add_jobs_dir_arguments(p)
    p.add_argument("command", nargs="*", metavar="-- CMD", help="command to run (default: a shell)")
    # argparse cannot take options after JOB and then `-- CMD` (it fills the positionals at
    # once): everything after the first `--` is the command, as the usage line says.
    p.parse_args = functools.partial(_parse, p)  # type: ignore[method-assign, assignment]


def _parse(
    parser: argparse.ArgumentParser,
    args: list[str] | None = None,
    namespace: argparse.Namespace | None = None,
) -> argparse.Namespace:
    import sys

    words = list(sys.argv[1:] if args is None else args)
    tail: list[str] = []
    if "--" in words:
        i = words.index("--")
        words, tail = words[:i], words[i + 1 :]
    ns = argparse.ArgumentParser.parse_args(parser, words, namespace)
    ns.command = [*ns.command, *tail]
    return ns


def run(ns: argparse.Namespace) -> int:
    from slurm_supernode.api.attach import attach

    return attach(
        job_dir_of(ns), ns.command, node=ns.node, py_spy=ns.py_spy, ranks=tuple(ns.rank or ())
    )
