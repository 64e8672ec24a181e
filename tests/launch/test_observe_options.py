"""--on-slow-node, --tokens-per-step, --samples-per-step: checked at the boundary, handed to the
job as variables."""

from __future__ import annotations

import pytest

from slurm_supernode.errors import InputError
from slurm_supernode.launch.observe_options import check_observe_env, observe_env


def test_values_become_variables():
    assert observe_env(None, None, None) == {}
    assert observe_env("requeue", 4096, 8) == {
        "SNRUN_ON_SLOW_NODE": "requeue",
        "SNRUN_TOKENS_PER_STEP": "4096",
        "SNRUN_SAMPLES_PER_STEP": "8",
    }


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (("drain", None, None), "--on-slow-node"),
        ((1, None, None), "--on-slow-node"),
        ((None, 0, None), "--tokens-per-step"),
        ((None, 2.5, None), "--tokens-per-step"),
        ((None, True, None), "--tokens-per-step"),
        ((None, None, "8"), "--samples-per-step"),
    ],
)
def test_bad_values_name_the_option(args, where):
    with pytest.raises(InputError) as info:
        observe_env(*args)
    assert info.value.where == where


def test_variables_given_with_env_are_checked_too():
    check_observe_env({"SNRUN_ON_SLOW_NODE": "warn", "SNRUN_TOKENS_PER_STEP": "12"})
    with pytest.raises(InputError) as info:
        check_observe_env({"SNRUN_SAMPLES_PER_STEP": "-3"})
    assert info.value.where == "--env SNRUN_SAMPLES_PER_STEP"


def test_plan_model_is_a_preset_the_planner_knows():
    assert observe_env(None, None, None, "llama-70b") == {"SNRUN_PLAN_MODEL": "llama-70b"}
    for bad in ("llama-7", 70, ""):
        with pytest.raises(InputError, match="bad value") as info:
            observe_env(None, None, None, bad)
        assert info.value.where == "--plan-model" and "llama-70b" in (info.value.hint or "")
    with pytest.raises(InputError) as info:
        check_observe_env({"SNRUN_PLAN_MODEL": "gpt-9"})
    assert info.value.where == "--env SNRUN_PLAN_MODEL"
