"""The site's ``imex_channels:`` key: do a super node's trays need IMEX channels, and how
Slurm's ``switch/nvidia_imex`` gives them.

``imex_channels: true`` is the short form (one channel per job, the plugin's defaults); a
mapping says more (docs/site-config.md)::

    imex_channels:
      per_segment: true      # one channel per super node of a job (--network=..., 25.11+)
      channel_count: 2048    # SwitchParameters=imex_channel_count
      dev_major: 511         # SwitchParameters=imex_dev_major (else /proc/devices)
      preflight: true        # the agent checks channel, domain, clique before rendezvous
      config: /etc/nvidia-imex/config.cfg
      nodes_config: /etc/nvidia-imex/nodes_config.cfg
      wait_s: 120            # the prolog's wait for the IMEX domain

A mapping means the trays need channels (``imex_channels`` true); ``enabled: false`` inside it
keeps the settings but turns the need off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from slurm_supernode.site.model import ImexSettings

if TYPE_CHECKING:
    import yaml

# where the driver (or Slurm's switch/nvidia_imex, per step) puts the channel device nodes
CHANNEL_DIR = "/dev/nvidia-caps-imex-channels"
IMEX_KEYS = (
    "enabled",
    "per_segment",
    "channel_count",
    "dev_major",
    "preflight",
    "config",
    "nodes_config",
    "wait_s",
)
MAX_CHANNELS = 2048  # the driver's channel devices: channel0..channel2047
MAX_MAJOR = 4095  # Linux character device majors are 12 bits


def parse_imex(b: Any, node: yaml.Node) -> tuple[bool, ImexSettings]:
    """(trays need channels, settings) from ``imex_channels``: a boolean or a mapping, through
    the loader's builder ``b`` (its checks, its problem list with line numbers)."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return bool(b.boolean(node, "imex_channels")), ImexSettings()
    m = b.mapping(node, "imex_channels", IMEX_KEYS) or {}
    flags = {k: b.boolean(m[k][1], f"imex_channels.{k}") for k in _FLAGS if k in m}
    enabled = flags.pop("enabled", True)
    kw: dict[str, Any] = {k: v for k, v in flags.items() if v is not None}
    kw |= _numbers(b, m)
    kw |= _paths(b, m)
    return enabled is not False, ImexSettings(**kw)


_FLAGS = ("enabled", "per_segment", "preflight")


def _numbers(b: Any, m: dict[str, tuple[yaml.Node, yaml.Node]]) -> dict[str, int]:
    """channel_count, dev_major (null: from /proc/devices), wait_s."""
    out: dict[str, int] = {}
    if "channel_count" in m:
        out["channel_count"] = b.integer(
            m["channel_count"][1],
            "imex_channels.channel_count",
            minimum=2,
            maximum=MAX_CHANNELS,
            hint="channel 0 is reserved: at least 2 gives one job a channel",
        )
    dnode = m["dev_major"][1] if "dev_major" in m else None
    if dnode is not None and not dnode.tag.endswith(":null"):
        out["dev_major"] = b.integer(dnode, "imex_channels.dev_major", minimum=1, maximum=MAX_MAJOR)
    if "wait_s" in m:
        out["wait_s"] = b.integer(m["wait_s"][1], "imex_channels.wait_s", minimum=1, maximum=3600)
    return {k: v for k, v in out.items() if v is not None}


def _paths(b: Any, m: dict[str, tuple[yaml.Node, yaml.Node]]) -> dict[str, str]:
    """config, nodes_config: absolute, no spaces (they go into the prolog)."""
    out: dict[str, str] = {}
    for key in ("config", "nodes_config"):
        if key in m:
            v = b.text(m[key][1], f"imex_channels.{key}")
            if v is not None and not _safe_path(v):
                b.err(m[key][1], f"imex_channels.{key} must be an absolute path, got {v!r}")
            elif v is not None:
                out[key] = v
    return out


def _safe_path(path: str) -> bool:
    """An absolute path without spaces or control characters (it goes into shell scripts)."""
    return path.startswith("/") and all(c.isprintable() and not c.isspace() for c in path)


def switch_parameters(imex: ImexSettings) -> str:
    """``SwitchParameters=`` value: the channel count, and the major where the site fixes one."""
    parts = [f"imex_channel_count={imex.channel_count}"]
    if imex.dev_major is not None:
        parts.insert(0, f"imex_dev_major={imex.dev_major}")
    return ",".join(parts)


def switch_lines(imex: ImexSettings) -> list[str]:
    """The slurm.conf lines that turn the plugin on (every node and the controller)."""
    return [
        "SwitchType=switch/nvidia_imex",
        f"SwitchParameters={switch_parameters(imex)}",
    ]
