"""A node's series pushed to a REAL Pushgateway (started per test on a free loopback port),
scraped back and parsed with prometheus_client: the groups of two jobs and two nodes side by
side, replaced whole on each push, deleted at the end; a gateway that is down is said and
the publisher goes on; the site key checked at its line."""

from __future__ import annotations

import time
from pathlib import Path

from slurm_supernode.observe.prom_publish import node_summary, push_summary, unpush_node
from slurm_supernode.observe.prom_push import group_url, push_node
from slurm_supernode.runtime.prom_node import node_context, start_publishing
from slurm_supernode.site.loader import parse_site
from tests.observe.attempt_fixture import NODES, SLOW, SUPERNODE, T0, write_attempt
from tests.observe.pushgateway_fixture import free_port, pushgateway, scrape
from tests.waiting import wait_until

LOCAL = (Path(__file__).resolve().parents[2] / "site-configs" / "local.yaml").read_text()


def _ranks(node: str) -> list[int]:
    i = NODES.index(node)
    return [2 * i, 2 * i + 1]


def _push(url: str, job_dir: Path, job_id: int, node: str) -> None:
    ctx = node_context(job_id, 0, node, SUPERNODE[node])
    summary = node_summary(job_dir, ctx, node, _ranks(node), now=T0 + 65)
    assert push_summary(url, summary, node) is None


def _labels(samples, name):
    return {tuple(sorted(s.labels.items())) for s in samples.get(name, [])}


def test_groups_of_jobs_and_nodes_side_by_side_then_deleted(tmp_path):
    job_dir = tmp_path / "job"
    write_attempt(job_dir)
    with pushgateway(tmp_path) as url:
        for job_id in (4242, 4243):
            for node in (NODES[0], SLOW):
                _push(url, job_dir, job_id, node)
        got = scrape(url)
        steps = got["snrun_rank_step_seconds"]
        assert len(steps) == 2 * 2 * 2  # 2 jobs x 2 nodes x 2 ranks: nobody overwrote anybody
        one = next(s for s in steps if s.labels["job"] == "4243" and s.labels["rank"] == "7")
        assert one.labels["node"] == SLOW and one.labels["supernode"] == "sn1"
        assert one.labels["user"] and 0 < one.value < 10
        slow = {(s.labels["job"], s.labels["node"]): s.value for s in got["snrun_node_slow"]}
        assert slow == {("4242", NODES[0]): 0, ("4242", SLOW): 1, ("4243", NODES[0]): 0,
                        ("4243", SLOW): 1}  # fmt: skip
        devices = _labels(got, "snrun_device_utilization_ratio")
        assert len(devices) == 2 * 2 * 4 and all(dict(k)["device"] for k in devices)
        # a push replaces its group whole: a series the node no longer has is gone
        text = f'snrun_node_slow{{job="4242",user="u",node="{SLOW}",supernode="sn1"}} 0\n'
        assert push_node(url, 4242, SLOW, "# TYPE snrun_node_slow gauge\n" + text) is None
        got = scrape(url)
        assert not any(
            s.labels["job"] == "4242" and s.labels["node"] == SLOW
            for s in got["snrun_rank_step_seconds"]
        )
        assert len(got["snrun_rank_step_seconds"]) == 6
        # deleted at the job's end: that job's node only
        assert unpush_node(url, 4243, SLOW) is None
        got = scrape(url)
        left = {(s.labels["job"], s.labels["node"]) for s in got["snrun_node_slow"]}
        assert left == {("4242", NODES[0]), ("4242", SLOW), ("4243", NODES[0])}


def test_the_agents_publisher_pushes_each_period_and_deletes_at_the_end(tmp_path, capfd):
    job_dir = tmp_path / "job"
    write_attempt(job_dir)
    with pushgateway(tmp_path) as url:
        ctx = node_context(77, 0, SLOW, "sn1")
        finish = start_publishing("", job_dir, ctx, SLOW, _ranks(SLOW), period=0.2, gateway=url)
        assert wait_until(lambda: "snrun_node_slow" in scrape(url))
        got = scrape(url)
        assert {s.labels["rank"] for s in got["snrun_rank_last_step"]} == {"6", "7"}
        finish()
        assert "snrun_node_slow" not in scrape(url)
    assert capfd.readouterr().err == ""  # nothing went wrong: nothing said


def test_a_gateway_that_is_down_is_said_once_and_the_textfile_goes_on(tmp_path, capfd):
    job_dir = tmp_path / "job"
    write_attempt(job_dir)
    port = free_port()
    prom = tmp_path / "prom"
    ctx = node_context(78, 0, SLOW, "sn1")
    finish = start_publishing(
        str(prom), job_dir, ctx, SLOW, _ranks(SLOW), period=0.1, gateway=f"http://127.0.0.1:{port}"
    )
    said = []
    assert wait_until(lambda: said.append(capfd.readouterr().err) or "not pushed" in "".join(said))
    assert (prom / f"snrun-78-{SLOW}.prom").exists()  # the textfile is written all the same
    text = "".join(said)
    assert f"snrun agent on {SLOW}: not pushed to the Pushgateway http://127.0.0.1:{port}" in text
    assert "its series are missing there, the job goes on" in text
    with pushgateway(tmp_path, port) as url:  # it comes up: pushed, and said once
        assert wait_until(lambda: "snrun_node_slow" in scrape(url))
        assert wait_until(
            lambda: said.append(capfd.readouterr().err) or "working again" in said[-1]
        )
        finish()
    text = "".join(said) + capfd.readouterr().err
    assert text.count("not pushed") == 1 and text.count("push: working again") == 1
    # the gateway gone at the end: the delete that failed says how to do it by hand
    finish2 = start_publishing(
        "", job_dir, ctx, SLOW, [], period=30, gateway=f"http://127.0.0.1:{port}"
    )
    finish2()
    assert (
        f"curl -X DELETE {group_url(f'http://127.0.0.1:{port}', 78, SLOW)}"
        in capfd.readouterr().err
    )


def test_group_urls_take_any_name():
    url = group_url("http://gw:9091/", 5, "rack/1 n#3")
    assert url == "http://gw:9091/metrics/job@base64/NQ==/node@base64/cmFjay8xIG4jMw=="
    assert group_url("http://gw:9091", None, "n").startswith(
        "http://gw:9091/metrics/job@base64/bm9qb2I="
    )


def test_the_site_key():
    site, problems = parse_site(
        LOCAL + "observe:\n  pushgateway: http://gw.example:9091/\n", "t.yaml"
    )
    assert not problems and site.observe.pushgateway == "http://gw.example:9091"
    n = LOCAL.count("\n")
    for bad in ("gw.example:9091", "ftp://gw", "http://", "http://gw:99999", "9091"):
        _, problems = parse_site(LOCAL + f"observe:\n  pushgateway: {bad}\n", "t.yaml")
        assert [(p.line, "observe.pushgateway" in p.message) for p in problems] == [
            (n + 2, True)
        ], bad


def test_a_push_under_way_at_the_end_never_comes_after_the_delete(tmp_path, monkeypatch):
    """The agent stops the publisher while a slow push is still under way (and stops waiting
    for it): the group is deleted after that push, never before it (which left a finished
    job's series on the gateway for good)."""
    import threading

    from slurm_supernode.runtime import prom_node

    job_dir = tmp_path / "job"
    write_attempt(job_dir)
    pushing, pushed = threading.Event(), threading.Event()
    real_push = prom_node.push_summary

    def slow_push(gateway, summary, node):
        pushing.set()
        time.sleep(1.0)  # a gateway slow to answer, on a loaded node
        why = real_push(gateway, summary, node)
        pushed.set()
        return why

    monkeypatch.setattr(prom_node, "push_summary", slow_push)
    monkeypatch.setattr(prom_node, "FINISH_S", 0.01)
    with pushgateway(tmp_path) as url:
        ctx = node_context(79, 0, SLOW, "sn1")
        finish = start_publishing("", job_dir, ctx, SLOW, _ranks(SLOW), period=0.01, gateway=url)
        assert pushing.wait(60)
        finish()  # returns at once: the push is still under way
        assert pushed.wait(60)  # the push landed; the delete must follow it
        assert wait_until(lambda: "snrun_node_slow" not in scrape(url))
