"""What a job array's task (one combination of a sweep's parameters) tells its program."""

from __future__ import annotations

import json
from collections.abc import Mapping


def sweep_env(sweep: Mapping[str, object] | None) -> dict[str, str]:
    """What a sweep's task tells its program: ``SNRUN_SWEEP_TASK``, ``SNRUN_SWEEP_DIR`` and
    ``SNRUN_PARAM_<NAME>`` per parameter (also ``SNRUN_SWEEP_PARAMS``, all as JSON)."""
    if not sweep:
        return {}
    params = dict(sweep.get("params") or {})  # type: ignore[call-overload]
    env = {
        "SNRUN_SWEEP_TASK": str(sweep["task"]),
        "SNRUN_SWEEP_DIR": str(sweep["dir"]),
        "SNRUN_SWEEP_PARAMS": json.dumps(params, sort_keys=True),
    }
    return env | {f"SNRUN_PARAM_{str(k).upper()}": str(v) for k, v in params.items()}
