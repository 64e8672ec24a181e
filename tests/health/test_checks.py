"""Health checks as pure functions: devices, vendor tool output, IMEX, disk, drain rules."""

from __future__ import annotations

import pytest

from slurm_supernode.health import checks
from slurm_supernode.health.checks import CRITICAL, OK, UNKNOWN, WARNING, CheckResult


def test_device_paths_from_gres_pattern_or_vendor_default():
    assert checks.device_paths("/d/nvidia[0-2]", "nvidia", 8) == ["/d/nvidia0", "/d/nvidia1",
                                                                  "/d/nvidia2"]  # fmt: skip
    assert checks.device_paths(None, "ascend", 2) == ["/dev/davinci0", "/dev/davinci1"]
    assert checks.device_paths(None, "nvidia", 1) == ["/dev/nvidia0"]


def test_devices_missing_is_critical_and_names_them():
    cands = [f"/dev/nvidia{i}" for i in range(4)]
    assert checks.check_devices(cands, cands, 4).status == OK
    res = checks.check_devices(cands, cands[:2], 4)
    assert res.status == CRITICAL and "2 of 4" in res.message and "/dev/nvidia3" in res.message
    assert checks.check_devices(cands, cands, 99).status == CRITICAL
    assert checks.check_devices(cands, cands, 0).status == UNKNOWN


def test_nvidia_smi_ecc_and_row_remap():
    good = "0, 0, 0, 0\n1, [N/A], [N/A], [N/A]\n"
    assert checks.check_nvidia_smi(0, good).status == OK
    assert "2 GPUs" in checks.check_nvidia_smi(0, good).message
    res = checks.check_nvidia_smi(0, "0, 0, 0, 0\n1, 3, 0, 0\n")
    assert res.status == CRITICAL and "GPU 1: 3 uncorrected" in res.message
    assert checks.check_nvidia_smi(0, "0, 0, 1, 0\n").status == WARNING
    assert checks.check_nvidia_smi(0, "0, 0, 0, 1\n").status == CRITICAL
    failed = checks.check_nvidia_smi(9, "NVIDIA-SMI has failed because it couldn't communicate")
    assert failed.status == CRITICAL and "couldn't communicate" in failed.message


def test_xids_fatal_vs_informational():
    log = "NVRM: Xid (PCI:0000:3b:00): 13, pid=1, Graphics Exception\n"
    assert checks.check_xids(log).status == WARNING
    log += "NVRM: Xid (PCI:0000:86:00): 79, pid=0, GPU has fallen off the bus.\n"
    res = checks.check_xids(log)
    assert res.status == CRITICAL and "Xid 79 on PCI:0000:86:00" in res.message
    assert checks.check_xids("nothing here").status == OK


NPU_TABLE = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 23.0.0                   Version: 23.0.0                                               |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
+===========================+===============+====================================================+
| 0     910B3               | OK            | 93.2        45                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3161 / 65536         |
+===========================+===============+====================================================+
| 1     910B3               | {h1}          | 92.1        44                0    / 0             |
| 0                         | 0000:C2:00.0  | 0           0    / 0          3161 / 65536         |
+===========================+===============+====================================================+
"""


@pytest.mark.parametrize(
    ("health", "status"),
    [("OK", OK), ("Warning", WARNING), ("Alarm", CRITICAL), ("Critical", CRITICAL)],
)
def test_npu_smi_health_column(health, status):
    res = checks.check_npu_smi(0, NPU_TABLE.format(h1=health))
    assert res.status == status
    if status == OK:
        assert "2 NPUs" in res.message
    else:
        assert f"NPU 1: {health}" in res.message
    assert checks.check_npu_smi(1, "dcmi model initialized failed").status == CRITICAL


def test_imex_and_free_space():
    assert checks.check_imex(None).status == CRITICAL
    assert checks.check_imex([]).status == CRITICAL
    assert checks.check_imex(["/dev/nvidia-caps-imex-channels/channel0"]).status == OK
    assert checks.check_free_space("/scratch", 5 * 10**9, 10).status == CRITICAL
    assert checks.check_free_space("/scratch", 50 * 10**9, 10).status == OK
    assert checks.check_free_space("/nope", None, 10).status == CRITICAL


def test_overall_status_is_the_worst():
    r = lambda s: CheckResult("x", s, "")  # noqa: E731
    assert checks.overall_status([]) == OK
    assert checks.overall_status([r(OK), r(UNKNOWN)]) == UNKNOWN
    assert checks.overall_status([r(UNKNOWN), r(WARNING)]) == WARNING
    assert checks.overall_status([r(WARNING), r(CRITICAL), r(UNKNOWN)]) == CRITICAL


@pytest.mark.parametrize(
    ("status", "drained", "reason", "drain", "resume", "action"),
    [
        (CRITICAL, False, None, True, False, "drain"),
        (CRITICAL, False, None, False, False, None),  # no --drain: report only
        (CRITICAL, True, "admin: bad fan", True, False, None),  # someone else's drain stays
        (CRITICAL, True, "snrun: devices", True, False, None),  # already ours
        (OK, True, "snrun: devices: 3 of 4", False, True, "resume"),
        (WARNING, True, "snrun: disk", False, True, "resume"),
        (OK, True, "admin: bad fan", False, True, None),  # never resume another reason
        (OK, True, "maintenance snrun: later", False, True, None),  # prefix, not substring
        (OK, False, None, False, True, None),
        (UNKNOWN, True, "snrun: x", False, True, None),
    ],
)
def test_node_action_follows_nhc_convention(status, drained, reason, drain, resume, action):
    assert checks.node_action(status, drained, reason, drain=drain, resume_ok=resume) == action


def test_drain_reason_has_prefix_and_one_bounded_line():
    res = [CheckResult("devices", CRITICAL, "3 of 4\nvisible"), CheckResult("disk", OK, "fine"),
           CheckResult("imex", CRITICAL, "x" * 500)]  # fmt: skip
    reason = checks.drain_reason(res)
    assert reason.startswith("snrun: devices: 3 of 4 visible; imex: ")
    assert "\n" not in reason and len(reason) <= 200 and "disk" not in reason
