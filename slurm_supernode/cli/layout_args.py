"""The parallel-layout options, shared by `snrun plan` and `snrun` (submission).

Why one place: the plan a user checks and the job they submit must read the same flags the
same way (the agent rebuilds the rank map from the submitted layout).
"""

from __future__ import annotations

import argparse

from slurm_supernode.cli.options import positive
from slurm_supernode.errors import InputError
from slurm_supernode.placement.model import (
    DEFAULT_FRAMEWORK,
    DEFAULT_ORDER,
    FRAMEWORKS,
    TP_PP_DP_ORDER,
    Layout,
)

SIZES = (
    ("tp", "tensor parallel size (Megatron --tensor-model-parallel-size)"),
    ("cp", "context parallel size (--context-parallel-size)"),
    ("ep", "expert parallel size (--expert-model-parallel-size); carved out of dp x cp"),
    ("pp", "pipeline parallel size (--pipeline-model-parallel-size)"),
)


def add_layout_arguments(g: argparse._ActionsContainer) -> None:
    """--tp --cp --ep --pp --etp --dp-replicate --framework --order --use-tp-pp-dp-mapping."""
    for dim, text in SIZES:
        g.add_argument(
            f"--{dim}", type=positive, default=1, metavar="N", help=f"{text} (default 1)"
        )
    g.add_argument(
        "--etp",
        type=positive,
        metavar="N",
        help="expert tensor parallel size (--expert-tensor-parallel-size); default: the "
        "framework's (megatron: tp; torchtitan has none: 1 with EP, tp without)",
    )
    g.add_argument(
        "--dp-replicate",
        type=positive,
        default=1,
        metavar="N",
        help="torchtitan's data_parallel_replicate_degree (HSDP: dp = dp_replicate x dp_shard, "
        "dp_shard inferred as torchtitan's -1 does); default 1; --framework torchtitan only",
    )
    g.add_argument(
        "--framework",
        choices=FRAMEWORKS,
        default=DEFAULT_FRAMEWORK,
        help="whose rank groups to place: megatron (Megatron-Core RankGenerator, default) or "
        "torchtitan (ParallelDims meshes)",
    )
    g.add_argument(
        "--order",
        help=f"megatron rank order, innermost first (default {DEFAULT_ORDER})",
    )
    g.add_argument(
        "--use-tp-pp-dp-mapping",
        action="store_true",
        help=f"as Megatron-LM's flag: order {TP_PP_DP_ORDER}",
    )


def layout_from_args(ns: argparse.Namespace) -> Layout:
    """The Layout the options name (sizes validated later against the allocation)."""
    order = ns.order
    if ns.use_tp_pp_dp_mapping:
        if order not in (None, TP_PP_DP_ORDER):
            raise InputError(
                f"--use-tp-pp-dp-mapping selects order {TP_PP_DP_ORDER}, not {order}",
                where="--order",
                hint="give one of the two",
            )
        order = TP_PP_DP_ORDER
    if ns.dp_replicate != 1 and ns.framework != "torchtitan":
        raise InputError(
            f"--dp-replicate {ns.dp_replicate} is torchtitan's HSDP degree; "
            f"--framework {ns.framework} has no such option",
            where="--dp-replicate",
            hint="add --framework torchtitan, or drop --dp-replicate",
        )
    if ns.framework == "torchtitan" and ns.ep == 1 and ns.etp not in (None, ns.tp):
        raise InputError(
            f"torchtitan uses no expert tensor parallel size without EP (its experts follow"
            f" tp={ns.tp}), so {ns.etp} would be ignored",
            where="--etp",
            hint="give --ep N for expert parallelism, or drop --etp",
        )
    return Layout(
        tp=ns.tp,
        cp=ns.cp,
        ep=ns.ep,
        pp=ns.pp,
        etp=ns.etp,
        order=order or DEFAULT_ORDER,
        framework=ns.framework,
        dp_replicate=ns.dp_replicate,
    )
