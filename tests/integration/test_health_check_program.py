"""The exported HealthCheckProgram wrapper, run by slurmd itself (docs/admin.md section 7).

Installed exactly as the docs say (`snrun site export ... --format health-check -o FILE`,
`HealthCheckProgram=` and `HealthCheckInterval=` in slurm.conf, `scontrol reconfigure`): a node
whose device disappears is drained by slurmd's own run of the wrapper with snrun's reason, and
resumed by a later run once the device is back. Nothing here calls `snrun health`: the test only
changes the node's devices and waits on what sinfo reports.

The "device" is the site's `gres_file` of one node, moved to a folder of the test (a
`node_overrides` entry in the health check's copy of the cluster's site): the fake-GPU cluster's
devices are files, and taking one away is what the `devices` check detects on a real node.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_supernode.slurm.nodes import node_infos
from tests.integration.helpers import pythonpath, wait_for

pytestmark = pytest.mark.slurm

INTERVAL = 5  # HealthCheckInterval, seconds: short, the test waits a few of them at most
WAIT = 180  # a bound on a loaded machine (8 nodes x 2 python starts per interval), not a sleep


def sinfo_state(node: str) -> tuple[str, str]:
    """(state, reason) of ``node``: the state as sinfo reports it (what the test waits on),
    the whole reason from scontrol (sinfo cuts it to a column width)."""
    out = subprocess.run(["sinfo", "-h", "-N", "-n", node, "-o", "%T"], capture_output=True,
                         text=True, timeout=60, check=True).stdout.strip()  # fmt: skip
    (info,) = node_infos(node)
    return out.splitlines()[0].lower(), info.reason or ""


def state_if(node: str, *, drained: bool) -> tuple[str, str] | None:
    """(state, reason) once ``node`` is drained, or once it is back in service: not drained,
    responding (24.11 shows a resumed node as `idle*` for a moment) and without snrun's reason
    (which the resume clears once the node responds), else None."""
    state, reason = sinfo_state(node)
    if drained:
        return (state, reason) if "drain" in state else None
    back = "drain" not in state and not state.endswith("*") and not reason.startswith("snrun:")
    return (state, reason) if back else None


def reconfigure(conf: Path, want: str | None) -> None:
    subprocess.run(["scontrol", "reconfigure"], check=True, timeout=60, capture_output=True)

    def applied() -> bool:
        shown = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True,
                               timeout=60).stdout  # fmt: skip
        line = next((ln for ln in shown.splitlines() if ln.startswith("HealthCheckProgram")), "")
        return (want in line) if want else ("(null)" in line or not line.split("=")[-1].strip())

    wait_for(applied, 60, f"slurmctld to read HealthCheckProgram={want}")


def test_slurmd_drains_a_bad_node_and_resumes_it_once_repaired(slurm_cluster, tmp_path) -> None:
    conf = slurm_cluster.conf
    node = slurm_cluster.nodes[-1]
    cluster_site = conf.parent / "site.yaml"
    from slurm_supernode.site.loader import load_site

    devices = load_site(str(cluster_site)).node(node).devices
    dev = tmp_path / f"dev-{node}"
    dev.mkdir()
    for i in range(devices):
        (dev / f"nvidia{i}").touch()
    site = tmp_path / "health-site.yaml"
    site.write_text(
        cluster_site.read_text()
        + f"\nnode_overrides:\n  - {{nodes: {node}, gres_file: '{dev}/nvidia[0-{devices - 1}]'}}\n"
    )
    wrapper = tmp_path / "snrun-health-check"
    # the PATH of a node: without the test's client wrappers, which enter the cluster's
    # namespaces from outside (slurmd runs the wrapper inside, where scontrol is the real one)
    clients = str(slurm_cluster.minicluster.parent / "clients")
    path = ":".join(p for p in os.environ["PATH"].split(":") if p.rstrip("/") != clients)
    if slurm_cluster.slurm_prefix is not None:  # 25.11 from source: its clients, as on its nodes
        path = f"{slurm_cluster.slurm_prefix}/bin:{slurm_cluster.slurm_prefix}/sbin:{path}"
    env = os.environ | {"PYTHONPATH": pythonpath(), "PATH": path}
    # as docs/admin.md: snrun site export SITE --format health-check -o FILE
    export = subprocess.run(
        [sys.executable, "-m", "slurm_supernode", "site", "export", str(site), "--format",
         "health-check", "-o", str(wrapper)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert export.returncode == 0, export.stderr
    assert os.access(wrapper, os.X_OK) and f"HealthCheckProgram={wrapper}" in export.stderr
    text = wrapper.read_text()
    assert f"SNRUN_SITE={site}" in text and " --drain " in text and " --resume-ok " in text

    original = conf.read_text()
    assert "HealthCheckProgram" not in original
    others = [n for n in slurm_cluster.nodes if n != node]
    try:
        conf.write_text(
            original + f"HealthCheckProgram={wrapper}\nHealthCheckInterval={INTERVAL}\n"
            "HealthCheckNodeState=ANY\n"
        )
        reconfigure(conf, str(wrapper))
        assert not any("drain" in sinfo_state(n)[0] for n in [node, *others])

        (dev / "nvidia1").unlink()  # a device is gone: slurmd's next check drains the node
        state, reason = wait_for(lambda: state_if(node, drained=True), WAIT,
                                 f"slurmd's health check to drain {node}")  # fmt: skip
        assert reason.startswith("snrun: devices: ") and "nvidia1" in reason, reason
        assert not any("drain" in sinfo_state(n)[0] for n in others)  # only the bad node

        (dev / "nvidia1").touch()  # repaired: a later check resumes it (snrun drained it)
        state, reason = wait_for(lambda: state_if(node, drained=False), WAIT,
                                 f"slurmd's health check to resume {node}")  # fmt: skip
        assert state in ("idle", "mixed", "allocated"), (state, reason)
    finally:
        conf.write_text(original)
        reconfigure(conf, None)
        if "drain" in sinfo_state(node)[0]:  # leave the cluster as found, whatever failed
            subprocess.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"],
                           timeout=60, check=False)  # fmt: skip
