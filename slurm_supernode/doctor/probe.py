"""Read a node's devices and storage (the side-effecting half of the doctor's steps 1, 5, 6).

Parsers are pure (``parse_smi_query``, ``parse_fabric``); the rest runs tools with the same
timeouts as ``snrun health`` and imports torch only for the compute check.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
import uuid
from dataclasses import replace

from slurm_supernode.doctor.model import DeviceFacts, SmiGpu, StorageFacts
from slurm_supernode.health.probe import run_tool

SMI_QUERY = [
    "nvidia-smi",
    "--query-gpu=index,pci.bus_id,uuid,name,driver_version,clocks.sm,clocks.max.sm",
    "--format=csv,noheader,nounits",
]
_GPU_HEADER = re.compile(r"^GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f])\s*$")
_BLOCK = 4 << 20  # storage test block


def normalise_bus_id(text: str) -> str:
    """'00000000:18:00.0' (nvidia-smi) and '0000:18:00.0' (sysfs) -> '0000:18:00.0'."""
    text = text.strip().lower()
    domain, sep, rest = text.partition(":")
    if not sep:
        return text
    try:
        return f"{int(domain, 16):04x}:{rest}"
    except ValueError:
        return text


def _int(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def parse_smi_query(text: str) -> list[SmiGpu]:
    """Rows of ``SMI_QUERY``'s output (rows that do not parse are left out)."""
    gpus = []
    for line in text.strip().splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) < 7 or not cols[0].isdigit():
            continue
        gpus.append(
            SmiGpu(
                index=int(cols[0]),
                bus_id=normalise_bus_id(cols[1]),
                uuid=cols[2],
                name=cols[3],
                driver=cols[4],
                sm_clock=_int(cols[5]),
                max_sm_clock=_int(cols[6]),
            )
        )
    return gpus


def parse_fabric(text: str) -> dict[str, tuple[str, str]]:
    """``nvidia-smi -q``: bus id -> (Fabric State, ClusterUUID) for GPUs that show a Fabric
    section (multi-node NVLink systems; 'N/A' elsewhere)."""
    out: dict[str, tuple[str, str]] = {}
    bus, in_fabric, state, cluster = None, False, "", ""
    for raw in text.splitlines():
        line = raw.rstrip()
        m = _GPU_HEADER.match(line.strip())
        if m:
            if bus is not None and (state or cluster):
                out[bus] = (state, cluster)
            bus, in_fabric, state, cluster = normalise_bus_id(m.group(1)), False, "", ""
            continue
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if stripped == "Fabric":
            in_fabric, fabric_indent = True, indent
            continue
        if in_fabric and stripped and indent <= fabric_indent:
            in_fabric = False
        if in_fabric and ":" in stripped:
            key, _, value = (p.strip() for p in stripped.partition(":"))
            if key == "State":
                state = value
            elif key == "ClusterUUID":
                cluster = "" if value in ("N/A", "") else value
    if bus is not None and (state or cluster):
        out[bus] = (state, cluster)
    return out


def read_smi() -> tuple[tuple[SmiGpu, ...], str]:
    """nvidia-smi's GPUs with their fabric state, or () and why not."""
    if not shutil.which("nvidia-smi"):
        return (), "no nvidia-smi on this node"
    code, out = run_tool(SMI_QUERY)
    if code != 0:
        return (), f"nvidia-smi failed ({code}): {(out.strip().splitlines() or [''])[0]}"
    gpus = parse_smi_query(out)
    code, q = run_tool(["nvidia-smi", "-q"])
    fabric = parse_fabric(q) if code == 0 else {}
    gpus = [
        replace(
            g,
            fabric_state=fabric.get(g.bus_id, ("", ""))[0],
            cluster_uuid=fabric.get(g.bus_id, ("", ""))[1],
        )
        for g in gpus
    ]
    return tuple(gpus), ""


def driver_version(path: str = "/proc/driver/nvidia/version") -> str:
    """The kernel module's version, "" without an NVIDIA driver."""
    try:
        with open(path, encoding="utf-8") as fh:
            words = fh.readline().split()
    except OSError:
        return ""
    after = words[words.index("Module") + 1 :] if "Module" in words else []
    return next((w for w in after if w[:1].isdigit() and "." in w), "")


def storage_test(path: str, megabytes: int) -> StorageFacts:
    """Write ``megabytes`` to a file under ``path`` (fsync), drop it from the page cache, read
    it back; MB/s (10^6 bytes) each way, and the free space. The file is removed."""
    real = os.path.expandvars(os.path.expanduser(path))
    try:
        st = os.statvfs(real)
        free = st.f_bavail * st.f_frsize
    except OSError as exc:
        return StorageFacts(path, None, None, None, f"not accessible: {exc.strerror}")
    name = os.path.join(real, f".snrun-doctor-{os.uname().nodename}-{uuid.uuid4().hex[:8]}")
    block = os.urandom(_BLOCK)
    blocks = max(1, (megabytes << 20) // _BLOCK)
    try:
        start = time.perf_counter()
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            for _ in range(blocks):
                os.write(fd, block)
            os.fsync(fd)
        finally:
            os.close(fd)
        wrote = time.perf_counter() - start
        fd = os.open(name, os.O_RDONLY)
        try:
            if hasattr(os, "posix_fadvise"):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            start = time.perf_counter()
            while os.read(fd, _BLOCK):
                pass
            read = time.perf_counter() - start
        finally:
            os.close(fd)
    except OSError as exc:
        return StorageFacts(path, free, None, None, f"write/read failed: {exc.strerror}")
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)
    size = blocks * _BLOCK / 1e6
    return StorageFacts(path, free, size / max(wrote, 1e-9), size / max(read, 1e-9))


def device_facts(local_index: int, *, matmul: int = 8192, iters: int = 10) -> DeviceFacts:
    """Torch's view of CUDA device ``local_index`` and its bf16 matmul rate (TFLOPS)."""
    import torch

    try:
        props = torch.cuda.get_device_properties(local_index)
        bus = ""
        if hasattr(props, "pci_bus_id"):
            bus = normalise_bus_id(
                f"{getattr(props, 'pci_domain_id', 0):04x}:{props.pci_bus_id:02x}:"
                f"{getattr(props, 'pci_device_id', 0):02x}.0"
            )
        dev = torch.device("cuda", local_index)
        a = torch.randn(matmul, matmul, device=dev, dtype=torch.bfloat16)
        b = torch.randn(matmul, matmul, device=dev, dtype=torch.bfloat16)
        for _ in range(2):
            a @ b
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(iters):
            a @ b
        end.record()
        end.synchronize()
        seconds = begin.elapsed_time(end) / 1e3 / iters
        del a, b
        return DeviceFacts(
            index=local_index,
            name=props.name,
            bus_id=bus,
            uuid=str(getattr(props, "uuid", "")),
            tflops=2 * matmul**3 / seconds / 1e12,
        )
    except Exception as exc:  # a broken device is a finding, not a crash
        return DeviceFacts(index=local_index, error=f"{type(exc).__name__}: {exc}"[:300])


def read_device_ips(site, host: str) -> tuple[tuple[str, ...] | None, str]:
    """Ascend: the HCCL device IPs of the node's devices as its tools report them
    (``runtime.ascend.read_node_facts``: ``hccn_tool -i N -ip -g``, else /etc/hccn.conf), in
    device id order ("" where a device gave none); (None, why) when none could be read."""
    from slurm_supernode.runtime.ascend import read_node_facts

    count = site.node(host).devices if site.has_node(host) else 0
    facts = read_node_facts(host, range(count))
    ips = tuple(facts.device(d).device_ip or "" for d in range(count))
    if not any(ips):
        return None, facts.ip_note or "no device IP read"
    return ips, facts.ip_note or ""
