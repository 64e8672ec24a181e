"""Gather a node's health inputs and run the checks (the side-effecting half of ``health``).

Fast by design, because Slurm runs it as HealthCheckProgram on every node: a few stats, a
glob, vendor tools only where installed (each with a timeout), no torch unless the
all-reduce is asked for. Each tool's output goes to the pure checks in ``checks.py``.
"""

from __future__ import annotations

import glob
import os
import shutil
from dataclasses import dataclass, field

from slurm_supernode import tools
from slurm_supernode.health import checks
from slurm_supernode.health.checks import CheckResult
from slurm_supernode.launch.container_options import ContainerOptions
from slurm_supernode.site.model import Site

IMEX_DIR = "/dev/nvidia-caps-imex-channels"
NVIDIA_SMI_QUERY = [
    "nvidia-smi",
    "--query-gpu=index,ecc.errors.uncorrected.volatile.total,"
    "remapped_rows.pending,remapped_rows.failure",
    "--format=csv,noheader,nounits",
]
TOOL_TIMEOUT = 15.0


@dataclass(frozen=True)
class HealthOptions:
    """What ``snrun health`` was asked to check on this node."""

    node: str
    expect_devices: int | None = None  # default: the site's device count of the node
    min_free_gb: float | None = None
    paths: tuple[str, ...] = ()  # where jobs write (with min_free_gb)
    allreduce: bool = False
    allreduce_backend: str = "auto"
    allreduce_nproc: int | None = None  # default: the node's devices (gloo: 2)
    timeout: float = 30.0
    # --container-*: the all-reduce in an image (api/health_image.py); the node checks stay on
    # the host, which is what they look at
    container: ContainerOptions = field(default_factory=ContainerOptions)

    def __post_init__(self) -> None:
        # the API takes the options, a mapping of their fields, or None (launch.container_options)
        object.__setattr__(self, "container", ContainerOptions.of(self.container))


def run_tool(argv: list[str], timeout: float = TOOL_TIMEOUT) -> tuple[int, str]:
    """A vendor tool with the health check's timeout (tools.run_tool)."""
    return tools.run_tool(argv, timeout)


def device_check(site: Site | None, opts: HealthOptions) -> CheckResult:
    node = site.node(opts.node) if site is not None and site.has_node(opts.node) else None
    if opts.expect_devices is not None:
        expected = opts.expect_devices
    elif node is not None:
        expected = node.devices
    else:
        return CheckResult(
            "devices", checks.UNKNOWN, f"node {opts.node} is not in the site; --expect-devices N"
        )
    vendor = site.vendor if site is not None else "nvidia"
    pattern = node.spec.gres_file if node is not None else None
    candidates = checks.device_paths(pattern, vendor, max(expected, node.devices if node else 0))
    present = [p for p in candidates if os.path.exists(p)]
    return checks.check_devices(candidates, present, expected)


def vendor_checks(site: Site | None) -> list[CheckResult]:
    vendor = site.vendor if site is not None else None
    out = []
    if vendor in (None, "nvidia") and shutil.which("nvidia-smi"):
        out.append(checks.check_nvidia_smi(*run_tool(NVIDIA_SMI_QUERY)))
        code, log = run_tool(["dmesg", "--notime"], timeout=5)
        if code == 0:
            out.append(checks.check_xids(log))
    if vendor in (None, "ascend") and shutil.which("npu-smi"):
        out.append(checks.check_npu_smi(*run_tool(["npu-smi", "info"])))
    return out


def imex_channels(directory: str | None = None) -> list[str] | None:
    directory = directory or IMEX_DIR
    if not os.path.isdir(directory):
        return None
    return sorted(glob.glob(os.path.join(directory, "channel*")))


def free_bytes(path: str) -> int | None:
    try:
        st = os.statvfs(os.path.expandvars(os.path.expanduser(path)))
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def run_checks(site: Site | None, opts: HealthOptions) -> list[CheckResult]:
    """Every applicable check for this node, in a fixed order."""
    results = [device_check(site, opts)]
    results += vendor_checks(site)
    if site is not None and site.imex_channels:
        results.append(checks.check_imex(imex_channels()))
    if opts.min_free_gb is not None:
        for path in opts.paths or ("/tmp",):
            results.append(checks.check_free_space(path, free_bytes(path), opts.min_free_gb))
    if opts.allreduce and opts.container.image is None:  # in an image: api/health_image.py
        from slurm_supernode.health.allreduce import allreduce_check

        node = site.node(opts.node) if site is not None and site.has_node(opts.node) else None
        results.append(
            allreduce_check(
                nproc=opts.allreduce_nproc,
                devices=node.devices if node else 0,
                backend=opts.allreduce_backend,
                timeout=opts.timeout,
            )
        )
    return results
