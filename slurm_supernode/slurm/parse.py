"""Parsers for Slurm's text output: `scontrol show ... -o` records, `sacct -P` rows, times.

`scontrol -o` prints one record per line as `Key=Value` pairs separated by spaces, but a few
values contain spaces themselves (JobName, Comment, node Reason, OS, ...). A whitespace token
therefore starts a new pair only when it looks like a Slurm key (`Capitalised=`,
`AllocNode:Sid=`, `CPUs/Task=`); inside free-text values (Reason, Comment, ...) it must also be
a key Slurm is known to print, so `Reason=see Note=x` keeps `Note=x` inside the reason.
"""

from __future__ import annotations

import re
from datetime import datetime

# A token that can start a `Key=Value` pair.
_KEY = re.compile(r"^([A-Z][A-Za-z0-9_]*(?:[:/][A-Za-z0-9_*]+)*)=(.*)$", re.S)

# Values typed by people, where a word like `Key=x` is more likely text than a new pair.
FREE_TEXT_KEYS = frozenset({"Reason", "Comment", "AdminComment", "SystemComment", "Extra", "OS"})

# Keys `scontrol show job|node|partition -o` prints (22.05 .. 24.11); only consulted after a
# free-text value.
_KNOWN_KEYS_TEXT = """
    JobId ArrayJobId ArrayTaskId JobName UserId GroupId MCS_label Priority Nice Account QOS
    JobState Reason Dependency Requeue Restarts BatchFlag Reboot ExitCode DerivedExitCode RunTime
    TimeLimit TimeMin SubmitTime EligibleTime AccrueTime StartTime EndTime Deadline SuspendTime
    SecsPreSuspend LastSchedEval Scheduler Partition AllocNode:Sid ReqNodeList ExcNodeList
    NodeList BatchHost NumNodes NumCPUs NumTasks CPUs/Task ReqB:S:C:T TRES Socks/Node
    NtasksPerN:B:S:C CoreSpec MinCPUsNode MinMemoryNode MinMemoryCPU MinTmpDiskNode Features
    DelayBoot OverSubscribe Contiguous Licenses Network Command WorkDir Comment AdminComment
    SystemComment StdErr StdIn StdOut Power TresPerNode TresPerJob TresPerTask MemPerTres
    CpusPerTres TresBind TresFreq Switches Wait-for-Switch Reservation ResvName Container
    ContainerID NtasksPerTRES Prolog Epilog Segment SegmentSize
    NodeName Arch CoresPerSocket CPUAlloc CPUEfctv CPUTot CPULoad AvailableFeatures
    ActiveFeatures Gres GresDrain GresUsed NodeAddr NodeHostName Port Version OS RealMemory
    AllocMem FreeMem Sockets Boards State ThreadsPerCore TmpDisk Weight Owner Partitions
    BootTime SlurmdStartTime LastBusyTime ResumeAfterTime CfgTRES AllocTRES CapWatts
    CurrentWatts AveWatts ExtSensorsJoules ExtSensorsWatts ExtSensorsTemp Extra InstanceId
    InstanceType Topology
    PartitionName AllowGroups AllowAccounts AllowQos AllocNodes Default DefaultTime
    DisableRootJobs ExclusiveUser ExclusiveTopo GraceTime Hidden MaxNodes MaxTime MinNodes LLN
    MaxCPUsPerNode MaxCPUsPerSocket Nodes PriorityJobFactor PriorityTier RootOnly ReqResv
    PreemptMode TotalCPUs TotalNodes SelectTypeParameters JobDefaults DefMemPerNode
    DefMemPerCPU MaxMemPerNode MaxMemPerCPU PowerDownOnIdle ResumeTimeout SuspendTimeout
    SuspendTime
"""
KNOWN_KEYS = frozenset(_KNOWN_KEYS_TEXT.split())


def parse_kv_line(line: str) -> dict[str, str]:
    """One `scontrol show ... -o` record as an ordered dict of key -> value (as printed)."""
    pairs: dict[str, str] = {}
    key: str | None = None
    parts: list[str] = []
    for token in line.split():
        m = _KEY.match(token)
        starts = m is not None and (
            key is None or key not in FREE_TEXT_KEYS or m.group(1) in KNOWN_KEYS
        )
        if starts and m is not None:
            if key is not None:
                pairs[key] = " ".join(parts)
            key, parts = m.group(1), ([m.group(2)] if m.group(2) else [])
        elif key is not None:
            parts.append(token)
    if key is not None:
        pairs[key] = " ".join(parts)
    return pairs


def parse_kv_records(text: str) -> list[dict[str, str]]:
    """Every non-empty line of `scontrol show ... -o` output as a record."""
    return [parse_kv_line(ln) for ln in text.splitlines() if ln.strip()]


def parse_config(text: str) -> dict[str, str]:
    """`scontrol show config` (`Key = value` lines) as a dict; other lines are ignored."""
    out: dict[str, str] = {}
    for ln in text.splitlines():
        key, sep, value = ln.partition("=")
        if sep and key.strip() and " " not in key.strip():
            out[key.strip()] = value.strip()
    return out


def parse_exit_code(text: str | None) -> tuple[int, int]:
    """`3:0` -> (3, 0): exit status and signal; anything unparsable -> (0, 0)."""
    status, _, sig = (text or "").partition(":")
    try:
        return int(status), int(sig or 0)
    except ValueError:
        return 0, 0


def parse_time(text: str | None) -> datetime | None:
    """Slurm's ISO timestamps; `Unknown`, `None`, `N/A` and empty -> None."""
    if not text or text in ("Unknown", "None", "N/A", "(null)"):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def null(text: str | None) -> str | None:
    """Slurm's spellings of "no value" (`(null)`, `N/A`, empty) -> None."""
    if text is None or text in ("", "(null)", "N/A", "None"):
        return None
    return text


def to_int(text: str | None, default: int = 0) -> int:
    """`8`, `8-8` (a min-max range: the minimum) -> int; anything else -> default."""
    head = (text or "").split("-")[0]
    return int(head) if head.isdigit() else default


def parse_sacct_rows(text: str, fields: list[str]) -> list[dict[str, str]]:
    """`sacct -P -n -o a,b,c` output as dicts; short or malformed rows are skipped."""
    rows = []
    for ln in text.splitlines():
        if not ln.strip():
            continue
        cells = ln.split("|")
        if len(cells) < len(fields):
            continue
        # A '|' inside the last field (e.g. a work dir) stays in that field.
        head, tail = cells[: len(fields) - 1], "|".join(cells[len(fields) - 1 :])
        rows.append(dict(zip(fields, [*head, tail], strict=True)))
    return rows


# ----- data_parser JSON (`scontrol show job --json`, Slurm >= 23.02) ------------------------------


def json_number(value: object) -> int | None:
    """data_parser numbers: `{"set": true, "infinite": false, "number": 4}` or a bare int;
    unset or infinite -> None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, dict):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        number = value.get("number")
        return number if isinstance(number, int) and not isinstance(number, bool) else None
    return None


def json_time(value: object) -> datetime | None:
    """A data_parser time (epoch seconds, 0 or unset = none) -> local naive datetime, like
    the text form `2026-11-30T16:04:47`."""
    epoch = json_number(value)
    return datetime.fromtimestamp(epoch) if epoch else None


def json_exit_code(value: object) -> tuple[int, int]:
    """A data_parser exit code `{"return_code": {...}, "signal": {"id": {...}}}` -> (code,
    signal), as `parse_exit_code("1:0")`; anything else -> (0, 0)."""
    if not isinstance(value, dict):
        return 0, 0
    code = json_number(value.get("return_code")) or 0
    signal = value.get("signal")
    sig = None
    if isinstance(signal, dict):  # `id` (data_parser); `signal_id` in 22.05's openapi form
        sig = json_number(signal.get("id", signal.get("signal_id")))
    return code, sig or 0
