"""`snrun plan`: the rank-to-device map of an allocation, its checks and communication cost.

Argument parsing only; the work is in ``slurm_supernode.placement``. Inside a job the
nodelist and site default to ``$SLURM_JOB_NODELIST`` and ``$SNRUN_SITE``. Never imports torch.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from slurm_supernode.cli.layout_args import add_layout_arguments, layout_from_args
from slurm_supernode.cli.options import int_range, number, refuse_if
from slurm_supernode.errors import InputError, PlacementError
from slurm_supernode.jobenv import JobEnvironment
from slurm_supernode.user_settings import SnrunSettings

if TYPE_CHECKING:
    from slurm_supernode.placement.cost import Workload
    from slurm_supernode.placement.model import Layout, RankMap
    from slurm_supernode.site.model import Site

_positive = int_range(1, 1 << 30)
_amount = number(above=0, maximum=1e18)
MODEL_FLAGS = (
    ("--hidden", _positive, "hidden size"),
    ("--layers", _positive, "transformer layers"),
    ("--seq", _positive, "sequence length (tokens)"),
    ("--micro-batch", _positive, "sequences per micro-batch"),
    ("--dtype-bytes", int_range(1, 64), "bytes per activation/gradient element (2 for bf16)"),
    ("--experts", _positive, "MoE experts per layer"),
    ("--topk", _positive, "experts per token"),
    ("--params", _amount, "total parameters (e.g. 70e9)"),
    ("--active-params", _amount, "parameters used per token (MoE)"),
    ("--kv-hidden", _positive, "K/V width = hidden x kv_heads / heads (GQA; default hidden)"),
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = "Show the rank-to-device map of an allocation and what it communicates."
    p.add_argument(
        "--site", default=SnrunSettings.from_environ().site, help="site name or YAML path"
    )
    p.add_argument("--nodelist", help="hostlist of the allocation (default $SLURM_JOB_NODELIST)")
    size = p.add_mutually_exclusive_group()
    size.add_argument(
        "-S",
        "--supernodes",
        type=_positive,
        metavar="N",
        help="plan N whole super nodes of the site (no --nodelist needed)",
    )
    size.add_argument(
        "-N",
        "--nodes",
        type=_positive,
        metavar="N",
        help="plan N nodes of the site, whole super nodes first (no --nodelist needed)",
    )
    p.add_argument("--nproc-per-node", type=_positive, help="ranks per node (default: devices)")
    add_layout_arguments(p.add_argument_group("parallel layout (the framework's rank groups)"))
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--full", action="store_true", help="list every node in the table")
    g = p.add_argument_group("communication planner")
    g.add_argument("--model", help="model preset (llama-70b, llama-405b, gpt-175b, mixtral-8x7b)")
    for flag, typ, text in MODEL_FLAGS:
        g.add_argument(flag, type=typ, help=text)
    g.add_argument("--global-batch", type=_positive, help="sequences per step (default: world)")
    g.add_argument("--compute-time", type=_amount, help="compute seconds per step (measured)")
    g.add_argument("--tflops", type=_amount, help="peak TFLOP/s per device (derives compute)")
    g.add_argument(
        "--mfu", type=number(above=0, maximum=1), default=0.4, help="model FLOPs utilisation (0.4)"
    )
    g.add_argument(
        "--sequence-parallel",
        action="store_true",
        help="Megatron --sequence-parallel (always on for MoE with tp > 1)",
    )
    g.add_argument(
        "--device-memory",
        type=_amount,
        metavar="GB",
        help="memory per device: layouts whose state does not fit are warned about and left "
        "out of --recommend (default: the site's device_memory_gb)",
    )
    g.add_argument("--recommend", action="store_true", help="rank feasible layouts (top 10)")
    g.add_argument("--top", type=_positive, default=10, help="how many layouts to recommend")
    o = p.add_argument_group("files")
    o.add_argument("--hccl-rank-table", metavar="OUT", help="write an HCCL rank table (Ascend)")
    o.add_argument("--rank-table-version", choices=("1.0", "1.2"), default="1.0")
    o.add_argument("--nccl-topo-file", metavar="OUT", help="write an NCCL_TOPO_FILE (NVIDIA)")


def _load_site(name: str | None):
    if not name:
        raise InputError("no site given", where="--site", hint="pass --site or set $SNRUN_SITE")
    try:
        from slurm_supernode.site.loader import load_site
    except ImportError:
        raise InputError("the site loader is not installed in this build", where="--site") from None
    return load_site(name)


def _workload(args):
    from slurm_supernode.placement.cost import Workload
    from slurm_supernode.placement.llm_presets import model_spec

    fields = {f.lstrip("-").replace("-", "_"): None for f, _, _ in MODEL_FLAGS}
    given = {k: getattr(args, k) for k in fields}
    if args.model is None and all(v is None for v in given.values()):
        if args.recommend or args.compute_time is not None or args.tflops is not None:
            raise InputError(
                "the communication planner needs a model",
                where="--model",
                hint="--model llama-70b, or --hidden --layers --seq --params",
            )
        return None
    model = model_spec(args.model, **given)
    return Workload(
        model,
        global_batch=args.global_batch,
        compute_time_s=args.compute_time,
        tflops=args.tflops,
        mfu=args.mfu,
        sequence_parallel=args.sequence_parallel,
    )


def check_experts(layout, model) -> None:
    """Expert parallelism needs experts to split: refuse --ep on a dense model (Megatron does)."""
    if layout.ep == 1:
        return
    if not model.is_moe:
        raise InputError(
            f"--ep {layout.ep} on a dense model ({model.name} has no experts): expert "
            "parallelism splits MoE experts (Megatron: num_experts must be set for it)",
            where="--ep",
            hint="drop --ep (data parallelism is already W/(tp*cp*pp)), or give --experts N",
        )
    if model.experts % layout.ep:
        raise InputError(
            f"{model.experts} experts are not a multiple of ep={layout.ep} (Megatron: number of "
            "experts should be a multiple of expert model parallel size)",
            where="--ep",
            hint="ep must divide --experts",
        )


def check_inapplicable(args: argparse.Namespace) -> None:
    """Options given explicitly that this plan cannot use (their defaults stay silent)."""
    for dest, option, why, hint in _inapplicable(args):
        refuse_if(args, dest, option, why, hint)


def _inapplicable(args: argparse.Namespace) -> list[tuple[str, str, str | None, str]]:
    """(dest, option, why it cannot apply here or None, what to do) for each checked option."""
    rec = None if args.recommend else "--recommend was not given"
    model = args.model is not None or any(
        getattr(args, f.lstrip("-").replace("-", "_")) is not None for f, _, _ in MODEL_FLAGS
    )
    no_model = None if model else "the communication planner runs only for a model"
    model_hint = "add --model NAME (or --hidden --layers --seq --params)"
    return [
        ("top", "--top", rec and f"counts --recommend's layouts, and {rec}",
         "add --recommend, or drop --top"),
        ("device_memory", "--device-memory",
         None if model or args.recommend
         else "checks a model's state per device, and no model was given",
         "add --model (or the model settings), or drop --device-memory"),
        ("rank_table_version", "--rank-table-version",
         None if args.hccl_rank_table
         else "is the version of --hccl-rank-table's file, and --hccl-rank-table was not given",
         "add --hccl-rank-table OUT, or drop --rank-table-version"),
        ("tflops", "--tflops",
         None if args.compute_time is None
         else "derives the compute time, and --compute-time gives it",
         "give --compute-time or --tflops (with --mfu), not both"),
        ("mfu", "--mfu",
         None if args.tflops is not None and args.compute_time is None
         else "scales --tflops into a compute time, and --tflops was not given",
         "add --tflops PEAK, or drop --mfu (a --compute-time is used as measured)"),
        ("global_batch", "--global-batch",
         no_model and f"is a setting of the model's steps, and {no_model}", model_hint),
        ("sequence_parallel", "--sequence-parallel",
         no_model and f"is a setting of the model's steps, and {no_model}", model_hint),
    ]  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from slurm_supernode.fsutil import check_output_path
    from slurm_supernode.placement.rankmap import build_rank_map

    by_size = _allocation_given(args)
    check_inapplicable(args)
    layout = layout_from_args(args)
    for option, out in (
        ("--hccl-rank-table", args.hccl_rank_table),
        ("--nccl-topo-file", args.nccl_topo_file),
    ):
        if out:
            check_output_path(out, option)
    work = _workload(args)  # validate the model flags before loading anything
    if work is not None:
        check_experts(layout, work.model)
    site = _load_site(args.site)
    if by_size:
        from slurm_supernode.placement.by_size import nodes_by_size

        args.nodelist = nodes_by_size(site, supernodes=args.supernodes, nodes=args.nodes)
    rm = build_rank_map(site, args.nodelist, layout, args.nproc_per_node)
    memory_gb = args.device_memory or site_device_memory(site, rm)

    if work is not None:
        from slurm_supernode.placement.cost import plan_cost

        try:
            base = build_rank_map(site, args.nodelist, layout, args.nproc_per_node, physical=False)
        except PlacementError:
            base = None
        rm = replace(rm, cost=plan_cost(site, rm, work, base))

    recs = None
    if args.recommend and work is not None:  # _workload refuses --recommend without a model
        recs = _recommendations(args, site, layout, work, memory_gb)
    _write_side_files(args, site, rm)
    _write_plan(args, site, rm, recs, work, memory_gb)
    return 0


def _recommendations(
    args: argparse.Namespace,
    site: Site,
    layout: Layout,
    work: Workload,
    memory_gb: float | None,
) -> list[dict[str, Any]]:
    """--recommend: the best layouts for this allocation (and model), as plan JSON rows."""
    from slurm_supernode.placement.recommend import recommend

    return [
        c.as_dict()
        for c in recommend(
            site,
            args.nodelist,
            work,
            args.nproc_per_node,
            order=layout.order,
            framework=layout.framework,
            device_memory_gb=memory_gb,
            top=args.top,
        )
    ]


def _write_side_files(args: argparse.Namespace, site: Site, rm: RankMap) -> None:
    """The HCCL rank table and the NCCL topology file, where asked for."""
    if args.hccl_rank_table:
        from slurm_supernode.placement.hccl import write_rank_table

        path = write_rank_table(site, rm, args.hccl_rank_table, args.rank_table_version)
        print(f"wrote HCCL rank table v{args.rank_table_version}: {path}", file=sys.stderr)
    if args.nccl_topo_file:
        from slurm_supernode.placement.nccl_topo import write_topo_file

        path = write_topo_file(site, rm, args.nccl_topo_file)
        print(f"wrote NCCL topology file: {path}", file=sys.stderr)


def _allocation_given(args: argparse.Namespace) -> bool:
    """Check that the allocation is named once: a nodelist (default: the job's) or a size.
    True when it is a size (resolved against the site later)."""
    by_size = args.supernodes is not None or args.nodes is not None
    if args.nodelist and by_size:
        raise InputError(
            "give either --nodelist or a size",
            where="-S/-N",
            hint="-S N or -N N plans that many nodes of the site; --nodelist names them",
        )
    if not by_size:  # inside a job: its own nodes
        args.nodelist = args.nodelist or JobEnvironment.from_environ().nodelist
    if not args.nodelist and not by_size:
        raise InputError(
            "no nodelist given",
            where="--nodelist",
            hint="pass --nodelist, a size (-S N super nodes, -N N nodes), or run inside a job",
        )
    return by_size


def _write_plan(args, site, rm, recs, work, memory_gb) -> None:
    """The plan as JSON or text on stdout; a layout that does not fit warns (stderr: JSON)."""
    from slurm_supernode.placement.render import render_plan

    if args.json:
        from slurm_supernode.placement.planjson import write_plan_json

        write_plan_json(rm, sys.stdout, {"site": site.name, "recommendations": recs})
    else:
        max_nodes = len(rm.nodes) if args.full else 16
        # a dense model has no expert groups: their rows would only repeat the dense ones
        dense = work is not None and not work.model.is_moe
        sys.stdout.write(
            render_plan(
                rm,
                site_name=site.name,
                recommendations=recs,
                max_nodes=max_nodes,
                dense=dense,
                device_memory=(memory_gb, "--device-memory" if args.device_memory else "site"),
            )
        )
    if args.json and work is not None and memory_gb is not None and rm.cost:  # text: inline
        state = rm.cost["plan"]["memory_gb"]
        if state > memory_gb:
            print(
                f"snrun plan: warning: this layout needs {state:.1f} GB of state per device; "
                f"the devices have {memory_gb:g} GB (hint: raise tp/pp/ep, or --recommend for "
                "layouts that fit)",
                file=sys.stderr,
            )


def site_device_memory(site, rm) -> float | None:
    """The smallest device memory of the allocation's nodes (None: the site does not say)."""
    sizes = [site.node(n.hostname).spec.device_memory_gb for n in rm.nodes]
    return None if not sizes or None in sizes else min(s for s in sizes if s is not None)
