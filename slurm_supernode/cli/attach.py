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
    import os
    import sys

    from slurm_supernode.errors import InputError, JobError
    from slurm_supernode.hostlist import expand
    from slurm_supernode.launch.inputs import load_inputs
    from slurm_supernode.runtime.ledger import current_job_id
    from slurm_supernode.slurm.attach import attach_argv, run_attached
    from slurm_supernode.slurm.job_lookup import job_info

    command = list(ns.command)
    if ns.rank and not ns.py_spy:
        raise InputError("--rank goes with --py-spy", where="--rank")
    if ns.py_spy and command:
        raise InputError("give either --py-spy or a command", where="--py-spy")
    job_dir = job_dir_of(ns)
    job_id = current_job_id(job_dir)
    info = job_info(job_id) if job_id else None
    if job_id is None or info is None or not info.running or not info.nodelist:
        state = info.state if info else "unknown to Slurm"
        raise JobError(f"job {job_id or ns.job} is not running ({state})", where="JOB")
    hosts = expand(info.nodelist)
    if ns.node and ns.node not in hosts:
        raise InputError(
            f"node {ns.node!r} is not part of job {job_id}",
            where="--node",
            hint="nodes: " + info.nodelist,
        )
    if ns.py_spy:
        python = load_inputs(job_dir).python or sys.executable
        helper = [python, "-m", "slurm_supernode", "stacks", f"--job-id={job_id}"]
        helper += [f"--rank={r}" for r in ns.rank or ()]
        from slurm_supernode.forensics.stacks import ranks_in_order
        from slurm_supernode.slurm.attach import attached_output

        # the nodes answer at once: their lines are labelled and put back in rank order
        nodes = [ns.node] if ns.node else hosts
        code, text = attached_output(attach_argv(job_id, nodes, helper, label=True))
        sys.stdout.write(ranks_in_order(text))
        return code
    node = ns.node or hosts[0]
    if command:
        return run_attached(attach_argv(job_id, [node], command))
    shell = [os.environ.get("SHELL") or "/bin/bash", "-l"]
    return run_attached(attach_argv(job_id, [node], shell, pty=sys.stdin.isatty()))
