"""`snrun [options] SCRIPT [ARGS...]`: submit a torchrun job on whole super nodes."""

from __future__ import annotations

import argparse
import sys

from slurm_supernode.cli.layout_args import add_layout_arguments, layout_from_args
from slurm_supernode.launch.jobspec import JobSpec, parse_env_items


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Submit a torchrun job that runs on whole super nodes. Options named like sbatch's "
        "mean the same; everything after SCRIPT goes to the script."
    )
    s = p.add_argument_group("sbatch-compatible")
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
    g = p.add_argument_group("super nodes and placement")
    g.add_argument("-S", "--supernodes", type=int, help="whole super nodes (default 1)")
    g.add_argument("-N", "--nodes", type=int, help="nodes; rounded up to whole super nodes")
    g.add_argument("--allow-partial", action="store_true", help="keep -N exactly")
    g.add_argument("--nproc-per-node", type=int, help="processes per node (default: devices)")
    add_layout_arguments(g)
    j = p.add_argument_group("snrun")
    j.add_argument("--site", help="site name or path (default $SNRUN_SITE)")
    j.add_argument("--env", action="append", default=[], metavar="K=V", help="repeatable")
    j.add_argument("--profile", action="append", default=[], help="extra site env profile")
    j.add_argument("--template", help="template name or path (default sbatch.sh.j2)")
    j.add_argument(
        "--block", action="append", default=[], metavar="NAME=PATH", help="replace one block"
    )
    j.add_argument(
        "--max-restarts",
        type=int,
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
        action="store_true",
        help="torchrun forks the workers from its own process, which has imported torch "
        "already: every start and restart saves one torch import per node (scripts only)",
    )
    j.add_argument("--jobs-dir", help="where job directories go (default: the site's)")
    j.add_argument("--dry-run", action="store_true", help="print script and plan; submit nothing")
    j.add_argument("--parsable", action="store_true", help="print the job id only")
    j.add_argument(
        "-W", "--wait", action="store_true", help="wait for the job chain to end (like sbatch)"
    )
    j.add_argument("--json", action="store_true", help="with --dry-run: the plan as JSON")
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a module instead of a script")
    p.add_argument("program", nargs="?", metavar="SCRIPT")
    p.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS")


def spec_from_args(ns: argparse.Namespace) -> JobSpec:
    from slurm_supernode.errors import InputError

    if ns.module:
        program, args, module = ns.module, ([ns.program] if ns.program else []) + ns.args, True
    elif ns.program:
        program, args, module = ns.program, ns.args, False
    else:
        raise InputError("no training script given", where="SCRIPT", hint="snrun train.py ARGS")
    blocks = []
    for item in ns.block:
        name, sep, path = item.partition("=")
        if not sep:
            raise InputError(f"bad --block {item!r}", where="--block", hint="use NAME=PATH")
        blocks.append((name, path))
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
    )


def run(ns: argparse.Namespace) -> int:
    import json

    from slurm_supernode.launch.facts import gather_facts
    from slurm_supernode.launch.job import plan_job, submit_job
    from slurm_supernode.launch.jobdir import jobs_root
    from slurm_supernode.launch.preview import plan_preview
    from slurm_supernode.site.loader import load_site

    spec = spec_from_args(ns)
    site = load_site(spec.site)
    facts = gather_facts(site, required=not ns.dry_run)
    root = jobs_root(ns.jobs_dir, site_jobs_dir=site.paths.jobs_dir)
    plan = plan_job(spec, site, facts, jobs_root=root)
    for notice in plan.request.notices:
        print(f"snrun: {notice}", file=sys.stderr)
    if ns.dry_run:
        preview = plan_preview(plan)
        if ns.json:
            print(json.dumps(preview, indent=2))
        else:
            print(plan.script, end="")
            print("\n# --- sbatch command (dry run: nothing submitted) ---")
            print("# " + preview["sbatch_command"])
            print("# --- rank plan for an example allocation ---")
            for line in preview["plan_lines"]:
                print(f"# {line}")
        return 0
    job_id = submit_job(plan)
    print(job_id if ns.parsable else f"Submitted batch job {job_id}", flush=True)
    if not ns.wait:
        return 0
    from slurm_supernode.supervise.wait import wait_chain

    final = wait_chain(plan.job_dir, job_id)
    print(f"snrun: job chain {final.get('state')}: {final.get('reason') or ''}", file=sys.stderr)
    return 0 if final.get("state") == "COMPLETED" else 1
