"""Model presets and the model spec the communication planner reads.

Why presets: "count your communication before you buy a super node" should take one flag
(``--model llama-70b``); flags override any field. Figures are the published architecture
sizes (hidden, layers, parameters); sequence lengths are common training settings.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from slurm_supernode.errors import InputError


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """What the planner needs to count bytes: shapes, sizes and the element width."""

    name: str
    hidden: int
    layers: int
    seq: int
    params: float  # total parameters
    micro_batch: int = 1  # sequences per micro-batch
    dtype_bytes: int = 2  # bf16/fp16 activations and gradients
    experts: int = 1  # MoE experts per layer (1: dense)
    topk: int = 1  # experts each token is routed to
    active_params: float | None = None  # parameters used per token (MoE); None: params

    @property
    def flops_params(self) -> float:
        return self.active_params if self.active_params is not None else self.params

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


PRESETS: dict[str, ModelSpec] = {
    m.name: m
    for m in (
        ModelSpec("llama-70b", hidden=8192, layers=80, seq=4096, params=70.6e9),
        ModelSpec("llama-405b", hidden=16384, layers=126, seq=8192, params=405.9e9),
        ModelSpec("gpt-175b", hidden=12288, layers=96, seq=2048, params=175e9),
        ModelSpec(
            "mixtral-8x7b",
            hidden=4096,
            layers=32,
            seq=4096,
            params=46.7e9,
            experts=8,
            topk=2,
            active_params=12.9e9,
        ),
    )
}

OVERRIDABLE = (
    "hidden",
    "layers",
    "seq",
    "params",
    "micro_batch",
    "dtype_bytes",
    "experts",
    "topk",
    "active_params",
)


def model_spec(preset: str | None = None, **overrides) -> ModelSpec:
    """A preset with ``overrides`` applied (None values ignored), or a custom model from flags."""
    given = {k: v for k, v in overrides.items() if v is not None}
    unknown = set(given) - set(OVERRIDABLE)
    if unknown:
        raise InputError(f"unknown model fields: {', '.join(sorted(unknown))}")
    if preset is not None:
        if preset not in PRESETS:
            raise InputError(
                f"unknown model preset {preset!r}",
                where="--model",
                hint="one of " + ", ".join(sorted(PRESETS)),
            )
        spec = replace(PRESETS[preset], **given)
    else:
        missing = [k for k in ("hidden", "layers", "seq", "params") if k not in given]
        if missing:
            raise InputError(
                "a custom model needs " + ", ".join(f"--{m.replace('_', '-')}" for m in missing),
                where="--model",
                hint="or pick a preset: " + ", ".join(sorted(PRESETS)),
            )
        spec = ModelSpec(name="custom", **given)
    for key in ("hidden", "layers", "seq", "micro_batch", "dtype_bytes", "experts", "topk"):
        if getattr(spec, key) < 1:
            flag = "--" + key.replace("_", "-")
            raise InputError(f"must be at least 1, got {getattr(spec, key)}", where=flag)
    if spec.params <= 0:
        raise InputError(f"must be positive, got {spec.params:g}", where="--params")
    if spec.topk > spec.experts:
        raise InputError(
            f"{spec.topk} is more than --experts {spec.experts}",
            where="--topk",
            hint="experts per token cannot exceed experts per layer",
        )
    return spec
