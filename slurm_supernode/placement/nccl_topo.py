"""A minimal ``NCCL_TOPO_FILE`` for NVIDIA nodes, from the site's device islands.

Why: on VMs and some containers NCCL cannot read the PCI/NVLink topology and falls back to
slow paths; a topology file tells it which GPUs share NVLink. This writes the shape NCCL reads
(``<system><cpu><pci><gpu><nvlink/></gpu></pci>...<nic><net/></nic></cpu></system>``) with one
NVLink entry per peer in the same island. The site model has no PCI bus ids, so bus ids are
synthesised (``0000:{base+dev}:00.0``) unless given; admins must check them against
``nvidia-smi --query-gpu=pci.bus_id`` before relying on the file. Kept deliberately simple.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from slurm_supernode.errors import PlacementError
from slurm_supernode.fsutil import write_atomic
from slurm_supernode.placement.model import RankMap
from slurm_supernode.site.model import NodeSpec, Site


def synth_busids(devices: int, base: int = 0x18) -> list[str]:
    return [f"0000:{base + d:02x}:00.0" for d in range(devices)]


def build_topo_xml(
    spec: NodeSpec,
    visible_devices: Sequence[int],
    *,
    sm: int = 90,
    nvlink_count: int = 18,
    busids: Sequence[str] | None = None,
    nic_speed_mbps: int = 400000,
) -> str:
    """The topology XML of one node; GPU ``rank`` is the local rank (visible order)."""
    busids = list(busids or synth_busids(spec.devices))
    if len(busids) != spec.devices:
        raise PlacementError(f"{len(busids)} bus ids for {spec.devices} devices")
    island = {d: g for g in spec.device_groups for d in g}
    local = {d: i for i, d in enumerate(visible_devices)}
    system = ET.Element("system", version="1")
    cpu = ET.SubElement(system, "cpu", numaid="0", affinity="f" * 16, arch="x86_64")
    for dev in range(spec.devices):
        pci = ET.SubElement(cpu, "pci", {"busid": busids[dev], "class": "0x030200"})
        attrs = {"dev": str(dev), "sm": str(sm), "gdr": "1"}
        if dev in local:
            attrs["rank"] = str(local[dev])
        gpu = ET.SubElement(pci, "gpu", attrs)
        for peer in island[dev]:
            if peer != dev:
                ET.SubElement(gpu, "nvlink", target=busids[peer], count=str(nvlink_count))
    if spec.nics.hcas:
        nic = ET.SubElement(cpu, "nic")
        for i, hca in enumerate(spec.nics.hcas):
            ET.SubElement(
                nic, "net", name=hca, dev=str(i), speed=str(nic_speed_mbps), port="1", gdr="1"
            )
    ET.indent(system)
    return ET.tostring(system, encoding="unicode") + "\n"


def write_topo_file(site: Site, rm: RankMap, path: str | os.PathLike[str], **kw: Any) -> Path:
    """One file for the allocation: all nodes must share the same hardware spec."""
    specs = {site.node(n.hostname).spec for n in rm.nodes}
    if len(specs) != 1:
        raise PlacementError(
            "nodes of the allocation have different hardware; one NCCL_TOPO_FILE cannot fit all",
            where="--nccl-topo-file",
        )
    text = build_topo_xml(specs.pop(), rm.nodes[0].visible_devices, **kw)
    return write_atomic(path, text)
