"""The IMEX prolog/epilog pair run with fake nvidia-imex, nvidia-imex-ctl, systemctl, scontrol
and getent on PATH: what the scripts write, start, wait for and stop. (The real daemon needs
NVIDIA hardware; docs/admin.md says how far this goes.)"""

from __future__ import annotations

import concurrent.futures
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from slurm_supernode.site.export import export
from slurm_supernode.site.loader import parse_site

SITE = """\
name: t
vendor: nvidia
imex_channels:
  config: {dir}/config.cfg
  nodes_config: {dir}/nodes_config.cfg
  wait_s: {wait}
supernodes:
  - name: sn0
    nodes: n[0-3]
  - name: sn1
    nodes: n[4-7]
node_defaults: {{devices: 4}}
host_ip: {{nodes: {{n0: 10.0.0.0, n1: 10.0.0.1, n2: 10.0.0.2, n3: 10.0.0.3}}}}
links:
  node: {{bandwidth_GBps: 900, latency_us: 2}}
  supernode: {{bandwidth_GBps: 900, latency_us: 3}}
  inter: {{bandwidth_GBps: 50, latency_us: 8}}
"""

FAKES = {
    # the hostlist of the fake job: SLURM_JOB_NODELIST holds it already expanded, by spaces
    "scontrol": 'echo "$3" | tr " " "\\n"\n',
    "getent": 'echo "192.168.7.${2#n} STREAM $2"\n',
    "nvidia-imex": 'echo "nvidia-imex $*" >>"$FAKE_LOG"\n',
    # UP from the third question on (the domain forming), or never when FAKE_NEVER_UP is set
    "nvidia-imex-ctl": (
        'n=$(($(cat "$FAKE_DIR/asked" 2>/dev/null || echo 0) + 1)); echo $n >"$FAKE_DIR/asked"\n'
        'if [ -z "${FAKE_NEVER_UP:-}" ] && [ $n -ge 3 ]; then s=UP; else s=DOWN; fi\n'
        'printf "Nodes:\\nNode #0 - 10.0.0.1 - READY\\nDomain State: %s\\n" "$s"\n'
    ),
}


def fake_bin(tmp_path: Path, extra: dict[str, str] | None = None) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (FAKES | (extra or {})).items():
        path = bin_dir / name
        path.write_text("#!/bin/bash\n" + body)
        path.chmod(0o755)
    return bin_dir


def script(tmp_path: Path, which: str, wait: int = 30) -> Path:
    site, problems = parse_site(SITE.format(dir=tmp_path, wait=wait), "site.yaml")
    assert not problems, problems
    path = tmp_path / f"imex-{which}.sh"
    path.write_text(export(site, f"imex-{which}"))
    path.chmod(0o755)
    return path


def run(tmp_path: Path, path: Path, node: str, nodelist: str, **env: str):
    bin_dir = tmp_path / "bin"
    environ = os.environ | {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "SLURMD_NODENAME": node,
        "SLURM_JOB_NODELIST": nodelist,
        "FAKE_LOG": str(tmp_path / "log"),
        "FAKE_DIR": str(tmp_path),
        **env,
    }
    return subprocess.run([str(path)], env=environ, capture_output=True, text=True, timeout=60)


def test_prolog_writes_this_super_nodes_job_nodes_starts_and_waits(tmp_path):
    fake_bin(tmp_path)
    prolog = script(tmp_path, "prolog")
    # a 2-super-node job (n[2-5]); on n2 the domain is sn0's part of the job: n2, n3
    done = run(tmp_path, prolog, "n2", "n2 n3 n4 n5")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "nodes_config.cfg").read_text() == "10.0.0.2\n10.0.0.3\n"
    assert (tmp_path / "log").read_text() == f"nvidia-imex -c {tmp_path}/config.cfg\n"
    assert (tmp_path / "asked").read_text().strip() == "3"  # asked until UP
    # on n5 (no host_ip in the site): sn1's nodes, resolved
    (tmp_path / "asked").unlink()
    assert run(tmp_path, prolog, "n5", "n2 n3 n4 n5").returncode == 0
    assert (tmp_path / "nodes_config.cfg").read_text() == "192.168.7.4\n192.168.7.5\n"


def test_prolog_fails_when_the_domain_stays_down(tmp_path):
    fake_bin(tmp_path)
    done = run(tmp_path, script(tmp_path, "prolog", wait=1), "n0", "n0 n1", FAKE_NEVER_UP="1")
    assert done.returncode == 1
    assert "IMEX domain of sn0 not UP after 1s (state: DOWN)" in done.stderr


def test_prolog_uses_the_systemd_unit_where_there_is_one(tmp_path):
    fake_bin(tmp_path, {"systemctl": 'echo "systemctl $*" >>"$FAKE_LOG"\n'})
    assert run(tmp_path, script(tmp_path, "prolog"), "n0", "n0 n1").returncode == 0
    assert (tmp_path / "log").read_text().splitlines() == [
        "systemctl cat nvidia-imex.service",
        "systemctl restart nvidia-imex.service",
    ]
    done = run(tmp_path, script(tmp_path, "epilog"), "n0", "n0 n1")
    assert done.returncode == 0
    assert (tmp_path / "log").read_text().splitlines()[-1] == "systemctl stop nvidia-imex.service"


def test_epilog_stops_the_daemon_and_empties_the_list(tmp_path):
    daemon = tmp_path / "daemon" / "nvidia-imex"  # a process named nvidia-imex, as the real one
    daemon.parent.mkdir()
    daemon.write_text("#!/bin/bash\nwhile :; do sleep 0.2; done\n")
    daemon.chmod(0o755)
    fake_bin(tmp_path)
    (tmp_path / "nodes_config.cfg").write_text("10.0.0.1\n")
    proc = subprocess.Popen([str(daemon)])
    try:
        deadline = time.time() + 10
        while time.time() < deadline:  # the kernel names it after the script once exec'd
            if Path(f"/proc/{proc.pid}/comm").read_text().strip() == "nvidia-imex":
                break
            time.sleep(0.05)
        # reaped as soon as it dies (a zombie would still be "running" for pgrep)
        reaper = concurrent.futures.ThreadPoolExecutor(1).submit(proc.wait)
        done = run(tmp_path, script(tmp_path, "epilog"), "n0", "n0 n1")
        assert done.returncode == 0, done.stderr
        assert reaper.result(timeout=30) == -signal.SIGTERM
        assert (tmp_path / "nodes_config.cfg").read_text() == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("which", ["prolog", "epilog"])
def test_scripts_parse(tmp_path, which):
    assert subprocess.run(["bash", "-n", str(script(tmp_path, which))]).returncode == 0
