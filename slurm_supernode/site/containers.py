"""Container mounts and the site's ``containers:`` section.

A mount is written as pyxis users know it, ``SRC[:DST[:FLAGS]]`` (FLAGS: ``ro`` or ``rw``), and
is the same for every runtime; ``launch.container_render`` turns it into each runtime's syntax.
Paths are absolute and free of ``,`` and ``:`` (the separators of pyxis' and Apptainer's lists).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slurm_supernode.site.model import RUNTIME_CHOICES, ContainerSettings

if TYPE_CHECKING:
    import yaml

CONTAINER_KEYS = ("runtime", "python", "image_dir", "mounts", "vendor_mounts", "env", "options")
MOUNT_FLAGS = ("ro", "rw")

# What a vendor's nodes need inside a container, mounted where the node has it (a node without
# the path just skips it): RDMA devices, and Ascend's driver tree and tools (the NPU devices
# themselves are in /dev, which every runtime here passes through or the image's hooks add).
VENDOR_MOUNTS: dict[str, tuple[str, ...]] = {
    "nvidia": ("/dev/infiniband",),
    "ascend": (
        "/dev/infiniband",
        "/usr/local/Ascend/driver:/usr/local/Ascend/driver:ro",
        "/usr/local/dcmi:/usr/local/dcmi:ro",
        "/usr/local/bin/npu-smi:/usr/local/bin/npu-smi:ro",
        "/etc/ascend_install.info:/etc/ascend_install.info:ro",
        "/etc/hccn.conf:/etc/hccn.conf:ro",
    ),
}


@dataclass(frozen=True, slots=True)
class Mount:
    """One bind mount: host path -> container path."""

    source: str
    dest: str
    readonly: bool = False

    def spec(self) -> str:
        """Back to ``SRC:DST[:ro]`` (the form pyxis takes and plan.json keeps)."""
        return f"{self.source}:{self.dest}" + (":ro" if self.readonly else "")


def parse_mount(text: str) -> Mount:
    """``SRC[:DST[:ro|rw]]`` -> Mount; ValueError with the reason."""
    parts = text.split(":")
    if not text or len(parts) > 3:
        raise ValueError(f"{text!r} is not SRC[:DST[:ro|rw]]")
    source = parts[0]
    dest = parts[1] if len(parts) > 1 and parts[1] else source
    flag = parts[2] if len(parts) > 2 else "rw"
    for path in (source, dest):
        if not path.startswith("/"):
            raise ValueError(f"{path!r} in {text!r} is not an absolute path")
        if "," in path or any(c.isspace() or not c.isprintable() for c in path):
            raise ValueError(f"{path!r} in {text!r} has a comma, a space or a control character")
    if flag not in MOUNT_FLAGS:
        raise ValueError(f"unknown mount flag {flag!r} in {text!r} (ro or rw)")
    return Mount(source.rstrip("/") or "/", dest.rstrip("/") or "/", flag == "ro")


def parse_containers(b: Any, node: yaml.Node) -> ContainerSettings:
    """The ``containers:`` section, through the loader's builder ``b`` (its checks, its
    problem list with line numbers)."""
    m = b.mapping(node, "containers", CONTAINER_KEYS) or {}
    kw: dict[str, Any] = {}
    if "runtime" in m:
        vnode = m["runtime"][1]
        v = b.text(vnode, "containers.runtime")
        if v is not None and v not in RUNTIME_CHOICES:
            choices = ", ".join(RUNTIME_CHOICES)
            b.err(vnode, f"unknown container runtime {v!r}", f"one of: {choices}")
        elif v is not None:
            kw["runtime"] = v
    for key in ("python", "image_dir"):
        if key in m:
            v = b.text(m[key][1], f"containers.{key}")
            if v is not None and key == "image_dir" and not v.startswith("/"):
                b.err(m[key][1], f"containers.image_dir must be an absolute path, got {v!r}")
            elif v is not None:
                kw[key] = v
    if "vendor_mounts" in m:
        v = b.boolean(m["vendor_mounts"][1], "containers.vendor_mounts")
        if v is not None:
            kw["vendor_mounts"] = v
    if "mounts" in m:
        kw["mounts"] = _mounts(b, m["mounts"][1])
    if "env" in m:
        kw["env"] = _env_names(b, m["env"][1])
    if "options" in m:
        kw["options"] = _options(b, m["options"][1], kw.get("runtime"))
    return ContainerSettings(**kw)


def _options(b: Any, node: yaml.Node, runtime: str | None) -> tuple[str, ...]:
    """``containers.options``: the runtime's own options (``--userns``), each one word."""
    if runtime == "oci":
        b.err(
            node,
            "containers.options: Slurm OCI takes no options",
            "the bundle's config.json says it",
        )
        return ()
    options = []
    for item in b.seq(node, "containers.options") or []:
        text = b.text(item, "containers.options item")
        if text is not None and not text.startswith("-"):
            b.err(item, f"containers.options: {text!r} is not an option", "--name or --name=value")
        elif text is not None:
            options.append(text)
    return tuple(options)


def _mounts(b: Any, node: yaml.Node) -> tuple[str, ...]:
    mounts = []
    for item in b.seq(node, "containers.mounts") or []:
        text = b.text(item, "containers.mounts item")
        if text is None:
            continue
        try:
            parse_mount(text)
        except ValueError as exc:
            b.err(item, f"containers.mounts: {exc}", "SRC[:DST[:ro|rw]], absolute paths")
            continue
        mounts.append(text)
    return tuple(mounts)


def _env_names(b: Any, node: yaml.Node) -> tuple[str, ...]:
    names = []
    for item in b.seq(node, "containers.env") or []:
        text = b.text(item, "containers.env item")
        if text is not None and not (text.isascii() and text.isidentifier()):
            b.err(item, f"bad environment variable name {text!r}", "NAME, not NAME=VALUE")
        elif text is not None:
            names.append(text)
    return tuple(names)
