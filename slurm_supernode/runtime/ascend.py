"""Read an Ascend node's own values: device IPs, SDIDs and SuperPoD id, with their sources.

Why: the rank table's ``device_ip`` and ``super_device_id`` are what HCCL routes by, and only
the node itself knows them (``hccn_tool``/``/etc/hccn.conf`` and ``npu-smi``). The agent calls
``read_node_facts`` at job start; ``snrun doctor`` reuses it to compare site and hardware.
Parsers are pure functions over the tools' documented output (samples and their sources in
tests/data/ascend/); the reader only runs the tools and never raises for a missing tool: it
records why a value is missing, and the rank table decides whether that is fatal.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from slurm_supernode import tools
from slurm_supernode.placement.hccl_facts import DeviceFacts, NodeFacts

HCCN_CONF = "/etc/hccn.conf"
# Where the Ascend driver installs its tools when they are not on PATH.
NPU_SMI_DIRS = ("/usr/local/bin", "/usr/local/sbin", "/usr/local/Ascend/driver/tools")
HCCN_TOOL_DIRS = ("/usr/local/Ascend/driver/tools", "/usr/local/bin")
TOOL_TIMEOUT = 20.0

Runner = Callable[[list[str]], tuple[int, str]]  # argv -> (exit code, stdout + stderr)

_KEY_VALUE = re.compile(r"^\s*([A-Za-z][\w \-()]*?)\s*:\s*(\S.*?)\s*$")
_ADDRESS = re.compile(r"^\s*address_(\d+)\s*=\s*(\S+)\s*$")


# -- parsers (pure) -------------------------------------------------------------------------
def parse_npu_mapping(text: str) -> dict[int, tuple[int, int]]:
    """``npu-smi info -m`` -> {device (physical) id: (NPU id, chip id)}, MCU rows skipped.

    Uses the ``Chip Phy-ID`` column when the driver prints it (A3), else ``Chip Logic ID``
    (older drivers print no physical id; there the two agree unless devices are remapped)."""
    lines = text.splitlines()
    head = next((i for i, line in enumerate(lines) if "NPU ID" in line and "Chip" in line), None)
    if head is None:
        return {}
    header = lines[head]
    for label in ("Chip Logic ID", "Chip Phy-ID", "Chip Name", "Chip ID", "NPU ID"):
        header = header.replace(label, label.replace(" ", "_"))
    cols = header.split()
    idx = {name: cols.index(name) for name in cols}
    dev_col = idx.get("Chip_Phy-ID", idx.get("Chip_Logic_ID"))
    if dev_col is None or "NPU_ID" not in idx or "Chip_ID" not in idx:
        return {}
    out: dict[int, tuple[int, int]] = {}
    for line in lines[head + 1 :]:
        fields = line.split()
        if len(fields) <= dev_col or not fields[dev_col].isdigit():
            continue  # MCU rows ("-") and blank lines
        try:
            out[int(fields[dev_col])] = (int(fields[idx["NPU_ID"]]), int(fields[idx["Chip_ID"]]))
        except ValueError:
            continue
    return out


def parse_key_values(text: str) -> dict[str, str]:
    """``Key   : value`` lines (npu-smi ``-t`` queries print ``\\t%-30s : %u``)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = _KEY_VALUE.match(line)
        if m:
            out[m.group(1).strip()] = m.group(2)
    return out


def parse_spod_info(text: str) -> tuple[int | None, str | None, int | None]:
    """``npu-smi info -t spod-info`` -> (SDID, Super Pod ID, Server Index); None where absent
    (Atlas A2 prints "This device does not support querying spod-info.")."""
    kv = parse_key_values(text)

    def num(key: str) -> int | None:
        value = kv.get(key, "")
        return int(value) if value.isdigit() else None

    pod = kv.get("Super Pod ID")
    return num("SDID"), (pod if pod and pod.isdigit() else None), num("Server Index")


def parse_hccn_ip(text: str) -> str | None:
    """``hccn_tool -i N -ip -g`` -> the ``ipaddr:`` value, if it is an IP address."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "ipaddr":
            ip = value.split("/")[0].strip()  # some builds print "ipaddr:IP / netmask:MASK"
            return ip if _is_ip(ip) else None
    return None


def parse_hccn_conf(text: str) -> dict[int, str]:
    """``/etc/hccn.conf`` -> {device id: address_N value}."""
    out: dict[int, str] = {}
    for line in text.splitlines():
        m = _ADDRESS.match(line)
        if m and _is_ip(m.group(2)):
            out[int(m.group(1))] = m.group(2)
    return out


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


# -- running the tools -----------------------------------------------------------------------
def find_tool(
    name: str, dirs: Iterable[str], environ: Mapping[str, str] | None = None
) -> str | None:
    """``name`` on PATH, else in the driver's usual folders; None when absent."""
    env = os.environ if environ is None else environ
    found = shutil.which(name, path=env.get("PATH", os.defpath))
    if found:
        return found
    for d in dirs:
        path = os.path.join(d, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def run_tool(argv: list[str], timeout: float = TOOL_TIMEOUT) -> tuple[int, str]:
    """An Ascend tool with the reader's timeout (tools.run_tool)."""
    return tools.run_tool(argv, timeout)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "no output")


def _npu_mapping(
    npu_smi: str | None, wanted: list[int], run: Runner
) -> tuple[dict[int, tuple[int, int]], str | None]:
    """npu-smi's device -> (NPU id, chip id) map, and why SDIDs cannot be read (None: they
    may be)."""
    if npu_smi is None:
        return {}, "npu-smi not found"
    code, out = run([npu_smi, "info", "-m"])
    mapping = parse_npu_mapping(out) if code == 0 else {}
    if not mapping:
        return mapping, f"npu-smi info -m: {_first_line(out)}"
    missing = [d for d in wanted if d not in mapping]
    if missing:
        return mapping, f"npu-smi info -m lists no device {','.join(map(str, missing))}"
    return mapping, None


def read_node_facts(
    hostname: str,
    devices: Iterable[int],
    *,
    environ: Mapping[str, str] | None = None,
    run: Runner = run_tool,
    hccn_conf: str | os.PathLike[str] = HCCN_CONF,
    workers: int = 8,
) -> NodeFacts:
    """What this node's tools say about ``devices`` (physical ids). Missing tools and failed
    queries leave values None and say why in ``sdid_note`` / ``ip_note``."""
    wanted = sorted(set(devices))
    npu_smi = find_tool("npu-smi", NPU_SMI_DIRS, environ)
    hccn_tool = find_tool("hccn_tool", HCCN_TOOL_DIRS, environ)
    mapping, sdid_note = _npu_mapping(npu_smi, wanted, run)
    conf_ips, ip_note = _conf_ips(hccn_tool, hccn_conf)
    fallback = ip_note  # a device's IP source when neither hccn_tool nor the file is there

    def spod(d: int) -> _Spod:
        return _spod(d, npu_smi, mapping, run)

    def device_ip(d: int) -> tuple[str | None, str | None]:
        return _device_ip(d, hccn_tool, conf_ips, hccn_conf, fallback, run)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        spods = list(pool.map(spod, wanted))
        ips = list(pool.map(device_ip, wanted))
    facts = []
    unsupported = False
    for d, (sdid, pod, index, why), (ip, src) in zip(wanted, spods, ips, strict=True):
        if sdid is None and sdid_note is None and why:
            sdid_note = why
            unsupported = "does not support" in why
        if ip is None and ip_note is None:
            ip_note = src
        npu, chip = mapping.get(d, (None, None))
        facts.append(
            DeviceFacts(
                d,
                npu_id=npu,
                chip_id=chip,
                device_ip=ip,
                ip_source=src if ip else None,
                sdid=sdid,
                super_pod_id=pod,
                server_index=index,
            )
        )
    # Partner dies (backup NICs) are found by NPU id: include every mapped device's NPU/chip.
    for d, (npu, chip) in sorted(mapping.items()):
        if d not in wanted:
            facts.append(DeviceFacts(d, npu_id=npu, chip_id=chip))
    return NodeFacts(
        hostname,
        tuple(facts),
        sdid_note=sdid_note,
        sdid_unsupported=unsupported,
        ip_note=ip_note,
    )


def _conf_ips(
    hccn_tool: str | None, hccn_conf: str | os.PathLike[str]
) -> tuple[dict[int, str] | None, str | None]:
    """Without hccn_tool: the device IPs of the hccn.conf file, or why there are none."""
    if hccn_tool is not None:
        return None, None
    try:
        return parse_hccn_conf(Path(hccn_conf).read_text()), None
    except OSError:
        return None, f"hccn_tool not found and no {hccn_conf}"


# a device's (SDID, super pod id, server index, why the SDID is missing)
_Spod = tuple[int | None, str | None, int | None, str | None]


def _spod(d: int, npu_smi: str | None, mapping: dict[int, tuple[int, int]], run: Runner) -> _Spod:
    """npu-smi's super pod facts of device ``d`` (all None where it has no NPU/chip for it)."""
    if npu_smi is None or d not in mapping:
        return None, None, None, None
    npu, chip = mapping[d]
    code, out = run([npu_smi, "info", "-t", "spod-info", "-i", str(npu), "-c", str(chip)])
    sdid, pod, index = parse_spod_info(out) if code == 0 else (None, None, None)
    why = None if sdid is not None else f"device {d}: {_first_line(out)}"
    return sdid, pod, index, why


def _device_ip(
    d: int,
    hccn_tool: str | None,
    conf_ips: dict[int, str] | None,
    hccn_conf: str | os.PathLike[str],
    fallback: str | None,
    run: Runner,
) -> tuple[str | None, str | None]:
    """Device ``d``'s IP and where it came from (hccn_tool, else the hccn.conf file), or None
    and why not."""
    if hccn_tool is not None:
        code, out = run([hccn_tool, "-i", str(d), "-ip", "-g"])
        ip = parse_hccn_ip(out) if code == 0 else None
        return ip, ("hccn_tool" if ip else f"hccn_tool -i {d}: {_first_line(out)}")
    if conf_ips is not None:
        ip = conf_ips.get(d)
        return ip, (str(hccn_conf) if ip else f"{hccn_conf} has no address_{d}")
    return None, fallback


def site_vs_hardware(node_ips: tuple[str, ...], facts: NodeFacts) -> list[str]:
    """One line per device whose site IP differs from the hardware's (for ``snrun doctor``)."""
    out = []
    for d, site_ip in enumerate(node_ips):
        hw = facts.device(d)
        if hw.device_ip and site_ip != hw.device_ip:
            out.append(
                f"{facts.hostname} device {d} IP: site {site_ip}, hardware {hw.device_ip}"
                f" ({hw.ip_source})"
            )
    return out
