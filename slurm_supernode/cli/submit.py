"""`snrun [options] SCRIPT [ARGS...]`: submit a torchrun job on whole super nodes."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from slurm_supernode.cli.layout_args import add_layout_arguments, layout_from_args
from slurm_supernode.cli.options import (
    Renamed,
    add_env_profile_argument,
    int_range,
    positive,
    refuse_if,
)
from slurm_supernode.launch.jobspec import COUNTS, JobSpec, parse_env_items

if TYPE_CHECKING:
    from slurm_supernode.api.planning import JobPlan
    from slurm_supernode.launch.container_options import ContainerOptions
    from slurm_supernode.launch.param_grid import Grid


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Submit a torchrun job that runs on whole super nodes. Options named like sbatch's "
        "mean the same; everything after SCRIPT (or -m MODULE) goes to the program."
    )
    _sbatch_arguments(p.add_argument_group("sbatch-compatible"))
    _placement_arguments(p.add_argument_group("super nodes and placement"))
    add_container_arguments(p)
    _snrun_arguments(p.add_argument_group("snrun"))
    add_sweep_arguments(p.add_argument_group("sweeps and dependencies (docs/snrun.md)"))
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module instead of a script")
    p.add_argument("program", nargs="?", metavar="SCRIPT", help="the training script")
    p.add_argument("args", nargs="*", metavar="ARGS", help="arguments of the script, kept as is")


def _sbatch_arguments(s: argparse._ArgumentGroup) -> None:
    """Options named like sbatch's, meaning the same."""
    s.add_argument("-J", "--job-name")
    s.add_argument("-p", "--partition")
    s.add_argument("-t", "--time")
    s.add_argument("-A", "--account")
    s.add_argument("-q", "--qos")
    s.add_argument("-o", "--output")
    s.add_argument("-e", "--error")
    s.add_argument("-d", "--dependency")
    s.add_argument("--exclusive", action="store_true", default=True, help="(default)")
    s.add_argument("--no-exclusive", dest="exclusive", action="store_false")
    s.add_argument("--mail-type")
    s.add_argument("--mail-user")
    s.add_argument("-D", "--chdir", dest="workdir")
    s.add_argument(
        "--sbatch",
        action="append",
        default=[],
        metavar="ARG",
        help="pass ARG to sbatch as is (repeatable), e.g. --sbatch=--reservation=r1",
    )


def _placement_arguments(g: argparse._ArgumentGroup) -> None:
    """How many super nodes and how ranks are placed on them."""
    g.add_argument(
        "-S",
        "--supernodes",
        type=int_range(*COUNTS["supernodes"]),
        metavar="N",
        help="whole super nodes (default 1); not sbatch's -S/--core-spec",
    )
    g.add_argument(
        "-N",
        "--nodes",
        type=int_range(*COUNTS["nodes"]),
        metavar="N",
        help="nodes; rounded up to whole super nodes",
    )
    g.add_argument("--allow-partial", action="store_true", help="keep -N exactly")
    g.add_argument(
        "--nproc-per-node",
        type=int_range(*COUNTS["nproc_per_node"]),
        metavar="N",
        help="processes per node (default: devices)",
    )
    add_layout_arguments(g)


def _snrun_arguments(j: argparse._ArgumentGroup) -> None:
    """snrun's own options: site, environment, restarts, dry run..."""
    j.add_argument("--site", help="site name or path (default $SNRUN_SITE)")
    j.add_argument("--env", action="append", default=[], metavar="K=V", help="repeatable")
    add_env_profile_argument(j)
    j.add_argument(
        "--profile",
        action=Renamed,
        new="--env-profile",
        why="sbatch's --profile selects acct_gather profiling",
    )
    j.add_argument("--template", help="template name or path (default sbatch.sh.j2)")
    j.add_argument(
        "--template-block",
        dest="block",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="replace one block of the template (repeatable)",
    )
    j.add_argument(
        "--block", action=Renamed, new="--template-block", why="sbatch's --block is not this"
    )
    j.add_argument(
        "--max-restarts",
        type=int_range(*COUNTS["max_restarts"]),
        metavar="N",
        help="restarts per failure class (default: the site's `restarts:`, else 3)",
    )
    j.add_argument(
        "--preflight",
        action="store_true",
        help="`snrun health` on every node before each attempt",
    )
    j.add_argument(
        "--fork-workers",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="torchrun forks the workers from its own process, which has imported torch "
        "already: every start and restart saves one torch import per node. Default: on for "
        "scripts on NVIDIA/CPU sites, off for -m modules and Ascend sites; "
        "--no-fork-workers spawns a fresh interpreter per worker",
    )
    j.add_argument(
        "--no-snapshot",
        dest="snapshot",
        action="store_false",
        help="run the live files in every attempt, not the copy taken at submission",
    )
    j.add_argument("--jobs-dir", help="where job directories go (default: the site's)")
    j.add_argument(
        "--on-slow-node",
        choices=("warn", "requeue"),
        help="a node persistently slower than its peers while the job runs: name it in "
        "`snrun status` (warn, the default), or also requeue the job without it (requeue)",
    )
    j.add_argument(
        "--tokens-per-step", type=positive, metavar="N", help="tokens one optimizer step processes"
    )
    j.add_argument(
        "--samples-per-step",
        type=positive,
        metavar="N",
        help="samples one optimizer step processes",
    )
    j.add_argument(
        "--plan-model",
        metavar="PRESET",
        help="the model the job trains, as `snrun plan --model` (llama-70b, ...): the plan's "
        "communication share for this job's layout stands beside the measured one",
    )
    j.add_argument("--dry-run", action="store_true", help="print script and plan; submit nothing")
    j.add_argument("--parsable", action="store_true", help="print the job id only")
    j.add_argument(
        "-W", "--wait", action="store_true", help="wait for the job chain to end (like sbatch)"
    )
    j.add_argument("--json", action="store_true", help="with --dry-run: the plan as JSON")


def add_sweep_arguments(g: argparse._ArgumentGroup) -> None:
    """A parameter grid as one job array; a start after another job's chain."""
    g.add_argument(
        "--sweep",
        action="append",
        default=[],
        metavar="NAME=VALUES",
        help="sweep NAME over V1,V2,... or FIRST-LAST (repeatable: every combination); one "
        "job array, a task per combination; {NAME} in the program's arguments is replaced, "
        "and the program gets SNRUN_PARAM_<NAME>",
    )
    g.add_argument("--sweep-file", metavar="YAML", help="the grid from a file: 'grid:' or 'tasks:'")
    g.add_argument(
        "--throttle",
        type=positive,
        metavar="N",
        help="with a sweep: at most N tasks run at once (sbatch --array=...%%N)",
    )
    g.add_argument(
        "--after",
        metavar="JOB[:ok|any|notok]",
        help="start when JOB's whole chain (restarts, requeues, resubmissions) has ended ok "
        "(default), any way, or not ok",
    )


def add_container_arguments(
    p: argparse.ArgumentParser, what: str = "torchrun and the ranks run in the image"
) -> None:
    """pyxis' option names, for every runtime the site has (docs/containers.md)."""
    c = p.add_argument_group(f"containers ({what})")
    c.add_argument(
        "--container-image",
        metavar="IMAGE",
        help="pyxis: /abs/img.sqsh or [REGISTRY#]IMAGE[:TAG]; Slurm OCI: a bundle directory; "
        "Apptainer: a .sif, a directory or docker://...",
    )
    c.add_argument(
        "--container-mounts",
        action="append",
        metavar="SRC[:DST[:ro]],...",
        help="more bind mounts (repeatable); the job directory is always mounted",
    )
    c.add_argument(
        "--container-workdir", metavar="DIR", help="where torchrun starts inside (default: -D)"
    )
    c.add_argument(
        "--container-env",
        action="append",
        metavar="NAME,...",
        help="job variables that override the image's (repeatable)",
    )
    c.add_argument(
        "--container-name", metavar="NAME", help="pyxis: a named container every restart reuses"
    )
    c.add_argument(
        "--container-mount-home",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="mount the home directory (default: the runtime's)",
    )


# (dest, flag) of the container options, for the actions that cannot honour them
CONTAINER_OPTIONS = (
    ("container_image", "--container-image"),
    ("container_mounts", "--container-mounts"),
    ("container_workdir", "--container-workdir"),
    ("container_env", "--container-env"),
    ("container_name", "--container-name"),
    ("container_mount_home", "--[no-]container-mount-home"),
)


def container_options(ns: argparse.Namespace) -> ContainerOptions:
    """The parsed ``--container-*`` options (repeatable ones joined with ``,``)."""
    from slurm_supernode.launch.container_options import ContainerOptions

    return ContainerOptions(
        image=ns.container_image,
        mounts=",".join(ns.container_mounts) if ns.container_mounts else None,
        workdir=ns.container_workdir,
        env=",".join(ns.container_env) if ns.container_env else None,
        name=ns.container_name,
        mount_home=ns.container_mount_home,
    )


def split_argv(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[list[str], list[str]]:
    """(snrun's options, [SCRIPT, ARGS...]): everything from the script on is the program's.

    ``-m MODULE`` ends snrun's options too (the module stays with them). A value-taking option
    consumes the next word; ``--`` ends the options explicitly.
    """
    longs = {o: a for o, a in parser._option_string_actions.items() if o.startswith("--")}
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            return argv[:i], argv[i + 1 :]
        if not tok.startswith("-") or tok == "-":
            return argv[:i], argv[i:]
        if tok.startswith("--"):
            name, eq, _ = tok.partition("=")
            action = longs.get(name)  # exact names only: abbreviations are unknown options
            takes = not eq and action is not None and action.nargs != 0
        else:
            action = parser._option_string_actions.get(tok[:2])
            takes = len(tok) == 2 and action is not None and action.nargs != 0
            if action is not None and action.dest == "module":
                end = i + 2 if len(tok) == 2 else i + 1
                return argv[:end], argv[end:]
        i += 2 if takes else 1
    return argv, []


def options_among(parser: argparse.ArgumentParser, args: list[str]) -> list[str]:
    """The words of ``args`` that are snrun's own options (``--dry-run``, ``--nodes=4``, ``-N``),
    up to a ``--`` (what follows it was marked as the program's). ``-h/--help`` is left out:
    every script has one."""
    found = []
    for word in args:
        if word == "--":
            break
        name = word.split("=", 1)[0] if word.startswith("--") else word
        action = parser._option_string_actions.get(name)
        if action is not None and not isinstance(action, argparse._HelpAction):
            found.append(word)
    return found


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse snrun's options only; the script and its arguments are kept verbatim.

    Arguments after SCRIPT that are snrun's own options (before a ``--`` among the program's
    arguments) are named in a warning; ``--dry-run`` there is refused, since ``snrun train.py
    --dry-run`` would submit a real job. (Launcher-only options are refused in
    ``check_inapplicable``; options a program may well have, ``--tp``, ``--json``, pass.)
    """
    from slurm_supernode.errors import InputError

    own, program = split_argv(parser, argv)
    ns = parser.parse_args(own)
    stray = options_among(parser, program[0 if ns.module is not None else 1 :])
    stray = [w for w in stray if w.split("=", 1)[0] not in LAUNCHER_OPTIONS]  # said below
    if stray:
        where = f"-m {ns.module}" if ns.module is not None else program[0]
        what = f"{' '.join(stray)} after the {'module' if ns.module else 'script'} go to it"
        how = "snrun's options go before the program; write them after '--' among its arguments"
        if "--dry-run" in stray:  # misplaced, it would submit a real job: never that
            raise InputError(f"{what}, not to snrun: a real job would be submitted",
                             where=where, hint=how)  # fmt: skip
        print(f"snrun: warning: {where}: {what}, not to snrun ({how})", file=sys.stderr)
    if ns.module is not None:
        ns.program, ns.args = None, program
    else:
        ns.program, ns.args = (program[0], program[1:]) if program else (None, [])
    return ns


# snrun's own options that only a launcher takes: after SCRIPT / -m MODULE they go to the
# program, which is almost certainly not what was meant (``snrun -m mod --fork-workers``).
LAUNCHER_OPTIONS = (
    "--fork-workers",
    "--no-fork-workers",
    "--no-snapshot",
    "--preflight",
    "--template-block",
    "--env-profile",
    "--jobs-dir",
    "--on-slow-node",
    "--tokens-per-step",
    "--samples-per-step",
    "--plan-model",
    "--allow-partial",
    "--sbatch",
    "--supernodes",
    "--max-restarts",
    "--sweep-file",
    "--throttle",
)
_LAUNCHER_FLAGS = (
    "--fork-workers",
    "--no-fork-workers",
    "--no-snapshot",
    "--preflight",
    "--allow-partial",
)


def check_inapplicable(ns: argparse.Namespace) -> None:
    """Options given explicitly that this request cannot honour (defaults may adapt)."""
    from slurm_supernode.errors import InputError

    program = f"-m {ns.module}" if ns.module is not None else ns.program
    args = ns.args[: ns.args.index("--")] if "--" in ns.args else ns.args
    for i, arg in enumerate(args):
        name, eq, _ = arg.partition("=")
        if name == "--fork-workers" and ns.module is not None:
            raise InputError(
                "forked workers are off for -m modules (torchrun forks a script file by its"
                f" path), and after {program} the option would go to the module anyway",
                where=name,
                hint="to fork workers, give the script's path instead of -m; else drop it",
            )
        if name in LAUNCHER_OPTIONS:
            takes = not eq and name not in _LAUNCHER_FLAGS and i + 1 < len(args)
            given = " ".join(args[i : i + 1 + takes])
            raise InputError(
                f"given after {program}, so it would go to the program, not to snrun",
                where=name,
                hint=f"snrun's options go before the program: snrun {given} {program} ...;"
                f" to pass it to the program, write it after '--'",
            )
    if ns.json and not ns.dry_run:
        raise InputError(
            "only applies with --dry-run",
            where="--json",
            hint="snrun --dry-run --json ... prints the plan; --parsable prints the job id",
        )
    dry = "--dry-run submits nothing" if ns.dry_run else None
    refuse_if(
        ns,
        "parsable",
        "--parsable",
        dry and f"prints a job id, and {dry}",
        "drop --dry-run to submit, or use --dry-run --json for a machine-readable plan",
    )
    refuse_if(
        ns,
        "wait",
        "-W/--wait",
        dry and f"waits for the job, and {dry}",
        "drop --dry-run to submit and wait, or drop -W",
    )
    refuse_if(
        ns,
        "throttle",
        "--throttle",
        None if ns.sweep or ns.sweep_file else "limits the tasks of a sweep, and none was given",
        "give --sweep NAME=VALUES or --sweep-file, or drop --throttle",
    )
    refuse_if(
        ns,
        "allow_partial",
        "--allow-partial",
        None if ns.nodes is not None else "keeps -N/--nodes exact, and no -N was given",
        "give -N N with it (-S always asks for whole super nodes), or drop it",
    )


def spec_from_args(ns: argparse.Namespace) -> JobSpec:
    from slurm_supernode.errors import InputError

    check_inapplicable(ns)
    if ns.module is not None:
        program, args, module = ns.module, ([ns.program] if ns.program else []) + ns.args, True
    elif ns.program:
        program, args, module = ns.program, ns.args, False
    else:
        raise InputError("no training script given", where="SCRIPT", hint="snrun train.py ARGS")
    blocks = []
    for item in ns.block:
        name, sep, path = item.partition("=")
        if not sep:
            raise InputError(f"bad value {item!r}", where="--template-block", hint="use NAME=PATH")
        _check_input_file(path, "--template-block", must_be_path=True)
        blocks.append((name, path))
    if ns.template:
        # a bare name (sbatch.sh.j2) may be a bundled template: only paths must exist
        _check_input_file(ns.template, "--template", must_be_path="/" in ns.template)
    return JobSpec(
        program=program,
        program_args=tuple(args),
        module=module,
        job_name=ns.job_name,
        partition=ns.partition,
        time=ns.time,
        account=ns.account,
        qos=ns.qos,
        output=ns.output,
        error=ns.error,
        dependency=ns.dependency,
        exclusive=ns.exclusive,
        mail_type=ns.mail_type,
        mail_user=ns.mail_user,
        sbatch_args=tuple(ns.sbatch),
        supernodes=ns.supernodes,
        nodes=ns.nodes,
        allow_partial=ns.allow_partial,
        nproc_per_node=ns.nproc_per_node,
        layout=layout_from_args(ns),
        env=parse_env_items(ns.env),
        profiles=tuple(ns.profile),
        site=ns.site,
        template=ns.template,
        blocks=tuple(blocks),
        max_restarts=ns.max_restarts,
        preflight=ns.preflight,
        fork_workers=ns.fork_workers,
        workdir=ns.workdir,
        snapshot=ns.snapshot,
        container=_container(ns),
        jobs_dir=ns.jobs_dir,
        on_slow_node=ns.on_slow_node,
        tokens_per_step=ns.tokens_per_step,
        samples_per_step=ns.samples_per_step,
        plan_model=ns.plan_model,
    )


def _container(ns: argparse.Namespace) -> ContainerOptions | None:
    """JobSpec's ``container``; None without a ``--container-*`` option (the container
    modules stay unloaded on the plain path)."""
    if all(getattr(ns, dest) is None for dest, _ in CONTAINER_OPTIONS):
        return None
    return container_options(ns)


def _check_input_file(path: str, option: str, *, must_be_path: bool) -> None:
    """A file the user named must be a readable regular file (a FIFO would block the reader).

    A plain name that is no file is left to the template lookup (``must_be_path`` False).
    """
    from pathlib import Path

    from slurm_supernode.errors import InputError
    from slurm_supernode.site.finder import path_problem, shown_path

    why = path_problem(Path(path).expanduser())
    if why is None or (why == "no such file" and not must_be_path):
        return
    raise InputError(f"{shown_path(path)}: {why}", where=option, hint="give a readable .j2 file")


def run(ns: argparse.Namespace) -> int:
    from slurm_supernode.api.planning import plan_parsed

    spec = spec_from_args(ns)
    grid = sweep_grid(ns)  # a bad grid fails before Slurm is asked anything
    if grid is not None:
        from slurm_supernode.cli.sweep_run import run_sweep

        return run_sweep(ns, spec, grid)
    job_plan = plan_parsed(spec, need_slurm=not ns.dry_run)
    if job_plan.refusal is not None:  # a dry run of a script still being written is fine
        print(
            f"snrun: warning: {job_plan.refusal} (a submission would be refused)", file=sys.stderr
        )
    for notice in job_plan.notices:
        print(f"snrun: {notice}", file=sys.stderr)
    if ns.dry_run:
        if ns.after:
            _after_notice(ns, job_plan)
        _print_dry_run(job_plan, as_json=ns.json)
        return 0
    from slurm_supernode.api.submission import submit

    job = submit(job_plan, after=ns.after)
    print(job.job_id if ns.parsable else f"Submitted batch job {job.job_id}", flush=True)
    if not ns.wait:
        return 0
    final = job.wait()
    print(f"snrun: job chain {final.state}: {final.reason or ''}", file=sys.stderr)
    return 0 if final.state == "COMPLETED" else 1


def sweep_grid(ns: argparse.Namespace) -> Grid | None:
    """The grid of --sweep / --sweep-file; None without either (a plain job)."""
    if not (ns.sweep or ns.sweep_file):
        return None
    from slurm_supernode.launch.param_grid import build_grid

    return build_grid(ns.sweep, ns.sweep_file)


def _after_notice(ns: argparse.Namespace, job_plan: JobPlan) -> None:
    """--after in a dry run: what the job would wait for."""
    from slurm_supernode.api.chain import prepare_after

    prepared = prepare_after(ns.after, job_plan.job_dir.parent, job_plan.spec.dependency)
    what = f"--dependency={prepared.dependency}" if prepared.dependency else "no dependency"
    done = " (that chain already ended so)" if not prepared.dependency else ""
    print(f"snrun: --after {ns.after}: {what}{done}", file=sys.stderr)


def _print_dry_run(job_plan: JobPlan, *, as_json: bool) -> None:
    """What a submission would do: the script, the sbatch command, the rank plan and, with a
    container, what each node's agent runs."""
    import json

    preview = job_plan.preview()
    if as_json:
        print(json.dumps(preview, indent=2))
        return
    directives = preview["sbatch_directives"]
    print(job_plan.script, end="")
    if directives:
        print(f"\n# --- #SBATCH lines of {job_plan.spec.program} (the command line wins) ---")
        print("# " + " ".join(directives))
    print("\n# --- sbatch command (dry run: nothing submitted) ---")
    print("# " + preview["sbatch_command"])
    print("# --- rank plan for an example allocation ---")
    for line in preview["plan_lines"]:
        print(f"# {line}")
    if "node_commands" in preview:
        from slurm_supernode.runtime.agent_preview import node_command_lines

        print("# --- what each node's agent runs (attempt 0; the agent stays on the host) ---")
        for line in node_command_lines(preview["node_commands"]):
            print(f"# {line}")
