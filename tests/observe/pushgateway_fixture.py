"""A real Prometheus Pushgateway (Debian's ``prometheus-pushgateway``, contrib/install-deps.sh)
on a free loopback port, for as long as a test needs it: started, waited for through its
``/-/ready`` endpoint, stopped (its own process only)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

BINARY = "prometheus-pushgateway"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@contextmanager
def pushgateway(tmp_path, port: int | None = None) -> Iterator[str]:
    """The gateway's base URL while it runs."""
    binary = shutil.which(BINARY) or shutil.which("pushgateway")
    if binary is None:
        pytest.skip(f"{BINARY} not installed (contrib/install-deps.sh installs it)")
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(tmp_path / f"pushgateway-{port}.log", "wb")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        # in memory only: Debian's default keeps a file in /var/lib/prometheus for everyone
        [binary, f"--web.listen-address=127.0.0.1:{port}", "--persistence.file="],
        stdout=log,
        stderr=log,
    )
    try:
        deadline = time.monotonic() + 60  # a loaded machine starts it slowly; it says when ready
        while not ready(url):
            if proc.poll() is not None:
                raise RuntimeError(f"pushgateway exited {proc.returncode}: see {log.name}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"pushgateway not ready in 60 s: see {log.name}")
            time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def scrape(url: str) -> dict[str, list]:
    """The gateway's /metrics parsed by prometheus_client: name -> samples (snrun's only)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        return snrun_samples(response.read().decode())


def snrun_samples(text: str) -> dict[str, list]:
    """Exposition text parsed by prometheus_client: name -> samples (snrun's only)."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(text):
        for sample in fam.samples:
            if sample.name.startswith("snrun_"):
                out.setdefault(sample.name, []).append(sample)
    return out
