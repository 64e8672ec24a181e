"""The watching options of a job (docs/observe.md): what to do with a node found slow, and how
many tokens or samples a step is. Checked here, at the boundary, and handed to the job as the
variables the supervisor and the ranks read (``SNRUN_ON_SLOW_NODE``, ``SNRUN_TOKENS_PER_STEP``,
``SNRUN_SAMPLES_PER_STEP``), and the model the job trains for the plan's communication share
(``--plan-model``: a ``snrun plan --model`` preset, ``SNRUN_PLAN_MODEL``), which a site profile or
``--env`` may also set: those are checked the same way."""

from __future__ import annotations

from collections.abc import Mapping

from slurm_supernode.errors import InputError

ON_SLOW_NODE = ("warn", "requeue")
SLOW_ENV = "SNRUN_ON_SLOW_NODE"
TOKENS_ENV = "SNRUN_TOKENS_PER_STEP"
SAMPLES_ENV = "SNRUN_SAMPLES_PER_STEP"
PLAN_MODEL_ENV = "SNRUN_PLAN_MODEL"


def check_on_slow_node(value: object, where: str = "--on-slow-node") -> str:
    if not isinstance(value, str) or value not in ON_SLOW_NODE:
        raise InputError(f"bad value {value!r}", where=where, hint="warn or requeue")
    return value


def check_count(value: object, where: str) -> int:
    """A positive whole number (not a bool, not a float)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"bad value {value!r}", where=where, hint="a whole number >= 1")
    return value


def check_plan_model(value: object, where: str = "--plan-model") -> str:
    """A model preset the planner knows (``placement/llm_presets``)."""
    from slurm_supernode.placement.llm_presets import PRESETS

    if not isinstance(value, str) or value not in PRESETS:
        raise InputError(
            f"bad value {value!r}", where=where, hint="one of " + ", ".join(sorted(PRESETS))
        )
    return value


def observe_env(
    on_slow_node: object,
    tokens_per_step: object,
    samples_per_step: object,
    plan_model: object = None,
) -> dict[str, str]:
    """The variables for the spec's values (None: not given, nothing set)."""
    out: dict[str, str] = {}
    if on_slow_node is not None:
        out[SLOW_ENV] = check_on_slow_node(on_slow_node)
    if tokens_per_step is not None:
        out[TOKENS_ENV] = str(check_count(tokens_per_step, "--tokens-per-step"))
    if samples_per_step is not None:
        out[SAMPLES_ENV] = str(check_count(samples_per_step, "--samples-per-step"))
    if plan_model is not None:
        out[PLAN_MODEL_ENV] = check_plan_model(plan_model)
    return out


def check_observe_env(env: Mapping[str, str]) -> None:
    """The same values given as variables (site profile, ``--env``)."""
    if SLOW_ENV in env:
        check_on_slow_node(env[SLOW_ENV], f"--env {SLOW_ENV}")
    if PLAN_MODEL_ENV in env:
        check_plan_model(env[PLAN_MODEL_ENV], f"--env {PLAN_MODEL_ENV}")
    for name in (TOKENS_ENV, SAMPLES_ENV):
        if name in env:
            text = env[name]
            if not text.isdigit() or int(text) < 1:
                raise InputError(f"bad value {text!r}", where=f"--env {name}",
                                 hint="a whole number >= 1")  # fmt: skip
