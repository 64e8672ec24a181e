"""The views of a real running job: `snrun metrics --json` shows every node with its samples and
its ranks' steps, `snrun top --once` renders them (with and without JOB), and the node's
Prometheus textfile is kept in the site's directory while the job runs and removed after; the
same series are pushed to a real Pushgateway (where the cluster's processes live: in its
network namespace for the namespaced clusters) and its groups deleted at the end."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.integration.helpers import EXAMPLES, snrun, submit, wait_for
from tests.observe.pushgateway_fixture import BINARY, free_port, snrun_samples

pytestmark = pytest.mark.slurm
TOKENS = 512


def site_with_textfiles(tmp_path: Path, prom: Path, gateway: str) -> Path:
    """local.yaml with paths.prometheus_textfile_dir and observe.pushgateway set."""
    text = (Path(__file__).resolve().parents[2] / "site-configs" / "local.yaml").read_text()
    site = tmp_path / "site.yaml"
    text = text.replace("paths:\n", f"paths:\n  prometheus_textfile_dir: {prom}\n", 1)
    site.write_text(text + f"\nobserve:\n  pushgateway: {gateway}\n")
    return site


HTTP = (
    "import sys, urllib.request as u\n"
    "r = u.urlopen(u.Request(sys.argv[2], method=sys.argv[1]), timeout=10)\n"
    "sys.stdout.write(r.read().decode())\n"
)


def _get(cluster, url: str, method: str = "GET") -> str | None:
    """``url`` where the cluster's processes are (its network namespace): the body, or None."""
    out = subprocess.run(cluster.inside(sys.executable, "-c", HTTP, method, url),
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    return out.stdout if out.returncode == 0 else None


@contextmanager
def gateway_in(cluster, tmp_path: Path) -> Iterator[str]:
    """A real Pushgateway where the agents can reach it, in memory only; stopped by its own
    lifecycle endpoint (it may run behind nsenter)."""
    binary = shutil.which(BINARY)
    if binary is None:
        pytest.skip(f"{BINARY} not installed (contrib/install-deps.sh installs it)")
    local = tmp_path / "pushgateway"  # /tmp is bound inside the namespaced clusters' roots
    shutil.copy(binary, local)
    url = f"http://127.0.0.1:{free_port()}"
    argv = [str(local), f"--web.listen-address={url[7:]}", "--persistence.file=",
            "--web.enable-lifecycle"]  # fmt: skip
    log = open(tmp_path / "pushgateway.log", "wb")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(cluster.inside(*argv), stdout=log, stderr=log)
    try:
        wait_for(lambda: proc.poll() is not None or _get(cluster, f"{url}/-/ready") is not None,
                 120, "the Pushgateway ready")  # fmt: skip
        assert proc.poll() is None, (tmp_path / "pushgateway.log").read_text()
        yield url
    finally:
        _get(cluster, f"{url}/-/quit", "POST")
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_metrics_and_top_of_a_running_job(slurm_cluster, tmp_path: Path) -> None:
    with gateway_in(slurm_cluster, tmp_path) as gateway:
        _metrics_top_and_prometheus(slurm_cluster, tmp_path, gateway)


def _metrics_top_and_prometheus(slurm_cluster, tmp_path: Path, gateway: str) -> None:
    jobs, prom = tmp_path / "jobs", tmp_path / "textfiles"
    site = site_with_textfiles(tmp_path, prom, gateway)
    _job_id, job_dir = submit(
        "--site", str(site), "-S", "1", "--nproc-per-node", "1",
        "--env-profile", "gloo",
        "--env", "SNRUN_SAMPLE_PERIOD=1", "--tokens-per-step", str(TOKENS),
        str(EXAMPLES / "train_observed.py"), "--seconds", "300",
        jobs=jobs,
    )  # fmt: skip
    try:
        data = wait_for(lambda: _every_node_sampled_and_stepping(job_dir, jobs), 420,
                        "snrun metrics --json: every node with samples and steps")  # fmt: skip
        nodes = data["nodes"]
        assert data["state"] == "RUNNING" and data["attempt"] == 0 and len(nodes) == 4
        (supernode,) = {n["supernode"] for n in nodes}  # one whole super node, from the site
        assert supernode in ("sn0", "sn1")
        for n in nodes:
            assert n["mem_total_bytes"] > 0 and n["cpu_percent"] is not None
            assert n["devices"] == []  # no GPU here: said in missing, not zeros
            assert len(n["ranks"]) == 1 and n["step_s"] > 0
        assert data["tokens_per_s"] == pytest.approx(
            sum(TOKENS / n["ranks"][0]["step_s"] for n in nodes), rel=0.5
        )
        assert not any(m.startswith("progress unknown") for m in data["missing"])

        top = snrun("top", str(job_dir), "--once", jobs=jobs).stdout
        rows = [line for line in top.splitlines() if line.split()[:2] in
                ([n["node"], supernode] for n in nodes)]  # fmt: skip
        assert len(rows) == 4, top
        assert f"snrun top  job {data['job_id']} attempt 0 RUNNING" in top
        newest = snrun("top", "--once", jobs=jobs).stdout  # without JOB: the running one
        assert f"job {data['job_id']} attempt 0" in newest

        files = wait_for(lambda: _textfiles(prom, nodes), 60, "a textfile per node")
        for node, families in files.items():
            series = [
                (s.name, tuple(sorted(s.labels.items()))) for f in families for s in f.samples
            ]
            assert len(series) == len(set(series)), node  # no duplicate series
            names = {s.name: s for f in families for s in f.samples}
            step = names["snrun_rank_step_seconds"]
            assert step.labels["node"] == node and step.labels["supernode"] == supernode
            assert step.labels["job"] == str(data["job_id"]) and step.labels["rank"].isdigit()
            assert names["snrun_node_memory_total_bytes"].value > 0

        pushed = wait_for(lambda: _pushed(slurm_cluster, gateway, nodes), 60, "pushed per node")
        steps = pushed["snrun_rank_step_seconds"]
        assert {s.labels["node"] for s in steps} == {n["node"] for n in nodes}
        for s in steps:  # the textfile's labels, and the gateway's grouping key agrees
            assert s.labels["job"] == str(data["job_id"]) and s.labels["supernode"] == supernode
            assert s.labels["rank"].isdigit() and s.labels["user"] and s.value > 0
    finally:
        snrun("cancel", str(job_dir), jobs=jobs, check=False)
    wait_for(lambda: not list(prom.glob("*.prom")), 120, "the textfiles removed at the end")
    wait_for(lambda: "snrun_" not in (_get(slurm_cluster, f"{gateway}/metrics") or "snrun_"),
             120, "the job's groups deleted from the Pushgateway")  # fmt: skip


def _pushed(cluster, gateway: str, nodes: list[dict]) -> dict | None:
    """The gateway's snrun series once every node pushed its ranks' step times."""
    text = _get(cluster, f"{gateway}/metrics")
    if text is None:
        return None
    samples = snrun_samples(text)
    have = {s.labels["node"] for s in samples.get("snrun_rank_step_seconds", [])}
    return samples if have == {n["node"] for n in nodes} else None


def _textfiles(prom: Path, nodes: list[dict]) -> dict | None:
    """Each node's parsed textfile, once every node's has its ranks' step times."""
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for n in nodes:
        path = next(prom.glob(f"snrun-*-{n['node']}.prom"), None)
        if path is None:
            return None
        families = list(text_string_to_metric_families(path.read_text()))
        if not any(f.name == "snrun_rank_step_seconds" for f in families):
            return None
        out[n["node"]] = families
    return out


def _every_node_sampled_and_stepping(job_dir: Path, jobs: Path) -> dict | None:
    out = snrun("metrics", str(job_dir), "--json", jobs=jobs, check=False)
    if out.returncode != 0:
        return None
    data = json.loads(out.stdout)
    nodes = data["nodes"]
    ok = nodes and all(n["sampled_t"] and n["ranks"] and n["step_s"] for n in nodes)
    return data if ok and data["tokens_per_s"] else None
