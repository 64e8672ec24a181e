"""Environment the agent gives torchrun and the ranks so that a failure leaves evidence."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ERROR_HOOK_DIR = Path(__file__).resolve().parent / "errorhook"
TRACE_BUFFER = "2000"  # entries of torch's NCCL flight recorder (its own default is 0: off)


def installed_torch() -> tuple[int, int] | None:
    """(major, minor) of the torch installed here, read from ``torch/version.py`` (importing
    torch or scanning package metadata would cost the agent a second on each restart)."""
    import re
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        try:
            text = Path(folder, "version.py").read_text()
        except OSError:
            continue
        m = re.search(r"__version__\s*=\s*['\"](\d+)\.(\d+)", text)
        if m:
            return int(m.group(1)), int(m.group(2))
    return None


def forensics_env(
    env: Mapping[str, str],
    log_dir: str,
    vendor: str,
    torch_version: tuple[int, int] | None = None,
) -> dict[str, str]:
    """Variables to add: the error hook (an uncaught exception goes to torchelastic's error
    file) and, where NCCL runs, torch's flight recorder, dumped into ``log_dir`` on a collective
    timeout or when ``snrun stacks`` asks through its pipe. User values win."""
    paths = [str(ERROR_HOOK_DIR), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    out = {"PYTHONPATH": os.pathsep.join(paths)}
    if vendor == "nvidia":
        trace = os.path.join(log_dir, "nccl_trace_rank_")
        wanted = {
            "TORCH_NCCL_DUMP_ON_TIMEOUT": "1",
            "TORCH_NCCL_DEBUG_INFO_PIPE_FILE": os.path.join(log_dir, "nccl_pipe_rank_"),
        }
        # torch renamed the flight recorder's variables (the old names warn on every rank)
        if torch_version is not None and torch_version >= (2, 7):
            wanted |= {"TORCH_FR_BUFFER_SIZE": TRACE_BUFFER, "TORCH_FR_DUMP_TEMP_FILE": trace}
            wanted["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] = trace
        else:
            wanted |= {"TORCH_NCCL_TRACE_BUFFER_SIZE": TRACE_BUFFER}
            wanted["TORCH_NCCL_DEBUG_INFO_TEMP_FILE"] = trace
        given = {"TORCH_NCCL_TRACE_BUFFER_SIZE", "TORCH_FR_BUFFER_SIZE"} & set(env)
        if given:  # the user chose a buffer size (or 0: off) under either name
            wanted.pop("TORCH_FR_BUFFER_SIZE", None)
            wanted.pop("TORCH_NCCL_TRACE_BUFFER_SIZE", None)
        out.update({k: v for k, v in wanted.items() if k not in env})
    return out
