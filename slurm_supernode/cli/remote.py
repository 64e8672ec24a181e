"""`snrun --cluster NAME VERB ...`: the verb run by the login node's snrun, over SSH.

The arguments go there as they are (paths are the cluster's), with two exceptions that carry
files across: the script of `snrun`/`snrun sweep` (its folder is shipped, incrementally, and
the job runs that copy), and the output files a verb writes (`bench report --html/--json/
--prom`, `doctor --html`, `metrics --html`): written there, then copied here. `logs -f`
reconnects after a dropped connection; `attach` and `top` get a terminal when ours is one.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from slurm_supernode.api.remote import Transport

LOCAL_ONLY = ("clusters", "remote", "agent", "supervise", "stacks")
# verbs that talk with a terminal there (a shell, the live view) -> options that make them not
LIVE: dict[str, tuple[str, ...]] = {"attach": ("--py-spy",), "top": ("--once",)}
# verb (and its action) -> the options naming a file the verb writes
OUTPUT_OPTIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("bench", "report"): ("--html", "--json", "--prom"),
    ("doctor", ""): ("--html",),
    ("metrics", ""): ("--html",),
}


def run_remote(cluster: str, verb: str, args: list[str]) -> int:
    from slurm_supernode.api.remote import connect
    from slurm_supernode.errors import InputError

    if verb in LOCAL_ONLY:
        raise InputError(f"`snrun {verb}` runs here, not on a cluster", where="--cluster")
    transport = connect(cluster)
    if verb in ("submit", "sweep"):
        args = _ship_program(transport, args)
    if verb == "logs" and ("-f" in args or "--follow" in args):
        return _follow(transport, args)
    outputs = _outputs(verb, args)
    if outputs:
        return _with_outputs(transport, verb, args, outputs)
    argv = args if verb == "submit" else [verb, *args]
    live = verb in LIVE and not set(args) & set(LIVE[verb])
    tty = live and sys.stdin.isatty() and sys.stdout.isatty()
    return transport.stream(argv, tty=tty, interactive=live)


def _ship_program(transport: Transport, args: list[str]) -> list[str]:
    """The script's folder shipped; its path in the argv replaced by the copy's there. A
    program that is not a file here (a path on the cluster, `-m`) goes as it is."""
    from slurm_supernode.api.remote_code import report, ship
    from slurm_supernode.cli.options import Parser
    from slurm_supernode.cli.submit import add_arguments, split_argv

    parser = Parser(prog="snrun")
    add_arguments(parser)  # `snrun sweep` has the same options
    own, program = split_argv(parser, args)
    module = any(w == "-m" or (w.startswith("-m") and len(w) > 2) for w in own[-2:])
    if not program or module or not Path(program[0]).is_file():
        return args
    shipped = ship(transport, Path(program[0]))
    report(shipped, transport.cluster.name)
    return [*own, "--", shipped.program, *program[1:]]


def _follow(transport: Transport, args: list[str]) -> int:
    from slurm_supernode.api.remote_logs import follow_lines

    for line in follow_lines(transport, ["logs", *args], reconnect=True):
        print(line, flush=True)
    return 0


def _outputs(verb: str, args: list[str]) -> list[tuple[int, str, str]]:
    """(index in args, option, local path) of each output file named."""
    action = args[0] if verb == "bench" and args else ""
    names = OUTPUT_OPTIONS.get((verb, action), ())
    found = []
    for i, word in enumerate(args):
        if word == "--":
            break
        for name in names:
            if word == name and i + 1 < len(args):
                found.append((i + 1, name, args[i + 1]))
            elif word.startswith(name + "="):
                found.append((i, name, word.split("=", 1)[1]))
    return found


def _with_outputs(
    transport: Transport, verb: str, args: list[str], outputs: list[tuple[int, str, str]]
) -> int:
    """Write the outputs into a fresh folder there, copy them here, remove the folder."""
    from slurm_supernode.api.remote import fetch
    from slurm_supernode.fsutil import check_output_path

    for _, name, local in outputs:
        check_output_path(local, name)
    made = transport.call(["mktemp", "-d", "-t", "snrun-out.XXXXXX"], snrun=False)
    folder = made.stdout.decode().strip()
    if made.returncode != 0 or not folder.startswith("/"):
        from slurm_supernode.remote.failures import remote_failure

        raise remote_failure(transport.cluster.name, "mktemp -d", made.returncode, made.stderr)
    argv = list(args)
    remote_paths = []
    for index, name, local in outputs:
        there = f"{folder}/{Path(local).name}"
        argv[index] = there if argv[index] == local else f"{name}={there}"
        remote_paths.append((there, local))
    try:
        code = transport.stream([verb, *argv])
        for there, local in remote_paths:
            try:
                fetch(transport, there, Path(local))
                print(f"snrun: {local}: copied from {transport.cluster.name}", file=sys.stderr)
            except Exception as exc:
                if code == 0:
                    raise
                del exc
    finally:
        transport.call(["rm", "-rf", "--", folder], snrun=False)
    return code
