"""`snrun sweep --sweep NAME=VALUES ... SCRIPT [ARGS]`: a parameter grid as one job array.
The same options as `snrun` (a grid given to plain `snrun` makes a sweep too)."""

from __future__ import annotations

import argparse

from slurm_supernode.cli import submit


def add_arguments(p: argparse.ArgumentParser) -> None:
    submit.add_arguments(p)
    p.description = (
        "Submit a sweep: one Slurm job array, a task per combination of the --sweep values "
        "(or per entry of --sweep-file), each task a supervised job chain on whole super nodes."
    )


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    return submit.parse(parser, argv)


def run(ns: argparse.Namespace) -> int:
    from slurm_supernode.errors import InputError

    if not (ns.sweep or ns.sweep_file):
        raise InputError(
            "no grid given",
            where="--sweep",
            hint="snrun sweep --sweep lr=1e-4,3e-4 --sweep seed=0-3 train.py --lr {lr}",
        )
    return submit.run(ns)
