"""Model presets and the model spec the communication planner reads.

Why presets: "count your communication before you buy a super node" should take one flag
(``--model llama-70b``); flags override any field. Figures are the published architecture
sizes (hidden, layers, parameters); sequence lengths are common training settings.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

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
    kv_hidden: int | None = None  # K (or V) width: hidden x kv_heads / heads (GQA); None: hidden

    @property
    def flops_params(self) -> float:
        return self.active_params if self.active_params is not None else self.params

    @property
    def kv_width(self) -> int:
        return self.kv_hidden if self.kv_hidden is not None else self.hidden

    @property
    def expert_params(self) -> float:
        """Parameters in the experts (all layers). Why derivable: with E experts of e
        parameters each and top-k routing, params = dense + E*e and active = dense + k*e."""
        if not self.is_moe or self.active_params is None or self.experts == self.topk:
            return 0.0
        per_expert = (self.params - self.active_params) / (self.experts - self.topk)
        return max(0.0, min(self.params, self.experts * per_expert))

    @property
    def dense_params(self) -> float:
        """Parameters every rank of a data-parallel replica holds (attention, embeddings...)."""
        return self.params - self.expert_params

    @property
    def is_moe(self) -> bool:
        return self.experts > 1

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


PRESETS: dict[str, ModelSpec] = {
    m.name: m
    for m in (
        # 64 heads, 8 KV heads -> K width 8192 x 8 / 64 = 1024
        ModelSpec("llama-70b", hidden=8192, layers=80, seq=4096, params=70.6e9, kv_hidden=1024),
        # 128 heads, 8 KV heads
        ModelSpec("llama-405b", hidden=16384, layers=126, seq=8192, params=405.9e9, kv_hidden=1024),
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
            kv_hidden=1024,  # 32 heads, 8 KV heads
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
    "kv_hidden",
)


def model_spec(preset: str | None = None, **overrides: Any) -> ModelSpec:
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
    if spec.kv_hidden is not None and not 1 <= spec.kv_hidden <= spec.hidden:
        raise InputError(
            f"must be in 1..--hidden ({spec.hidden}), got {spec.kv_hidden}", where="--kv-hidden"
        )
    if spec.active_params is not None and not 0 < spec.active_params <= spec.params:
        raise InputError(
            f"must be in (0, --params {spec.params:g}], got {spec.active_params:g}",
            where="--active-params",
        )
    if spec.topk > spec.experts:
        raise InputError(
            f"{spec.topk} is more than --experts {spec.experts}",
            where="--topk",
            hint="experts per token cannot exceed experts per layer",
        )
    return spec
