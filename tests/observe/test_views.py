"""The summary's views: the text of `snrun metrics`, a `snrun top` frame, the Prometheus
textfile (checked with the real exposition parser)."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from slurm_supernode.observe.attempt_files import load_attempt
from slurm_supernode.observe.metrics_text import format_summary
from slurm_supernode.observe.prom_textfile import (
    METRICS,
    render_node_textfile,
    textfile_path,
    write_node_textfile,
)
from slurm_supernode.observe.summary import JobContext, summarize
from slurm_supernode.observe.top_frame import RED, frame
from tests.observe.attempt_fixture import NODES, SLOW, SUPERNODE, T0, write_attempt


def summary(tmp_path, **kw):
    write_attempt(tmp_path, **kw)
    ctx = JobContext(
        job_id=4242, user="alice", attempt=0, nodes=NODES, supernode_of=SUPERNODE, state="RUNNING"
    )
    return summarize(load_attempt(tmp_path, 0), ctx, T0 + 65)


def test_text_names_every_node_and_the_slow_one(tmp_path):
    text = format_summary(summary(tmp_path))
    assert "job 4242 attempt 0 (RUNNING) of alice, 4 nodes" in text
    assert "communication 30% of a step" in text and "plan 18% (1.7x the plan)" in text
    assert f"SLOW NODE {SLOW} (sn1): x1.60" in text
    for node in NODES:
        assert f"\n{node} (" in text
    assert "dev3: util 97%  mem 60.0 GiB / 80.0 GiB  63 C  430 W" in text
    assert "ib0 rx 1.0MB/s tx 2.0MB/s" in text


def test_text_says_unknown(tmp_path):
    text = format_summary(summary(tmp_path, steps=False, comm=False))
    assert "step unknown" in text and "throughput unknown" in text
    assert "communication share unknown" in text and "progress unknown" in text
    assert "0.0 s" not in text


def test_top_frame_rows(tmp_path):
    lines = frame(summary(tmp_path), width=200)
    rows = {line.split()[0]: line for line in lines if line.split() and line.split()[0] in NODES}
    assert set(rows) == set(NODES)
    assert "500.0 ms" in rows["sn0-n0"] and "30%" in rows["sn0-n0"] and "18%" in rows["sn0-n0"]
    assert "x1.60" in rows[SLOW] and "55%" in rows[SLOW] and "1660W" in rows[SLOW]
    assert sum("util% 97 97 97 97" in line for line in lines) == 3
    assert all(len(line) <= 200 for line in lines)
    assert not any("\x1b" in line for line in lines)
    painted = frame(summary(tmp_path), width=60, color=True)
    slow_row = next(line for line in painted if line.startswith(RED + SLOW))
    assert len(slow_row) <= 60 + len(RED) + 4


def test_prometheus_textfile_parses_without_duplicates(tmp_path):
    s = summary(tmp_path)
    seen = set()
    for node in NODES:
        families = list(text_string_to_metric_families(render_node_textfile(s, node)))
        assert {f.name for f in families} <= {n.removesuffix("_total") for n in METRICS}
        for fam in families:
            assert fam.documentation and fam.type == "gauge"
            for sample in fam.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                assert key not in seen, key  # across the nodes' files too
                seen.add(key)
                assert {"job", "user", "node", "supernode"} <= set(sample.labels)
                assert sample.labels["job"] == "4242" and sample.labels["node"] == node
    by_name = {}
    for name, labels in seen:
        by_name.setdefault(name, []).append(dict(labels))
    assert all("rank" in labels for labels in by_name["snrun_rank_step_seconds"])
    assert all("device" in labels for labels in by_name["snrun_device_power_watts"])
    assert len(by_name["snrun_rank_step_seconds"]) == 8
    assert len(by_name["snrun_device_power_watts"]) == 16


def test_prometheus_values_and_unknowns(tmp_path):
    text = render_node_textfile(summary(tmp_path, steps=False), SLOW)
    values = {
        (s.name, s.labels.get("device"), s.labels.get("nic")): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }
    assert values[("snrun_node_slow", None, None)] == 1
    assert values[("snrun_device_utilization_ratio", "0", None)] == pytest.approx(0.55)
    assert values[("snrun_device_sm_clock_hertz", "0", None)] == pytest.approx(1.98e9)
    assert values[("snrun_node_network_receive_bytes_per_second", None, "ib0")] == 1e6
    assert values[("snrun_node_communication_share_ratio", None, None)] == pytest.approx(0.3)
    assert not any(name.startswith("snrun_rank_") for name, _, _ in values)  # no steps: absent
    assert ("snrun_node_step_seconds", None, None) not in values
    assert render_node_textfile(summary(tmp_path / "b"), "no-such-node") == ""


def test_label_values_are_escaped():
    from slurm_supernode.observe.summary import AttemptRecords

    ctx = JobContext(job_id=1, user='we"ird\\user', attempt=0, nodes=("n1",))
    s = summarize(AttemptRecords(), ctx, T0)
    text = render_node_textfile(s, "n1")
    (sample,) = [x for f in text_string_to_metric_families(text) for x in f.samples]
    assert sample.name == "snrun_node_slow" and sample.labels["user"] == 'we"ird\\user'


def test_textfile_is_written_atomically_and_replaced(tmp_path):
    s = summary(tmp_path / "job")
    out = write_node_textfile(tmp_path / "prom", s, SLOW)
    assert out == textfile_path(tmp_path / "prom", 4242, SLOW)
    assert out.name == f"snrun-4242-{SLOW}.prom"
    assert out.read_text() == render_node_textfile(s, SLOW)
    write_node_textfile(tmp_path / "prom", s, SLOW)  # the next period replaces, never appends
    assert out.read_text() == render_node_textfile(s, SLOW)
    assert {p.name for p in out.parent.iterdir()} <= {out.name, out.name + ".lock"}


def test_a_node_publishes_only_its_own_figures(tmp_path):
    from slurm_supernode.observe.prom_publish import publish_node, unpublish_node

    write_attempt(tmp_path / "job")
    ctx = JobContext(job_id=4242, user="alice", attempt=0, nodes=(SLOW,), supernode_of=SUPERNODE)
    prom = tmp_path / "textfile"
    assert publish_node(str(prom), tmp_path / "job", ctx, SLOW, ranks=(6, 7), now=T0 + 61) is None
    text = textfile_path(prom, 4242, SLOW).read_text()
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
    assert {s.labels["node"] for s in samples} == {SLOW}
    assert {s.labels["rank"] for s in samples if "rank" in s.labels} == {"6", "7"}
    assert any(s.name == "snrun_node_slow" and s.value == 1 for s in samples)
    unpublish_node(str(prom), 4242, SLOW)
    assert list(prom.iterdir()) == []


def test_an_unwritable_directory_is_a_reason_not_an_error(tmp_path):
    from slurm_supernode.observe.prom_publish import publish_node

    write_attempt(tmp_path / "job")
    (tmp_path / "file").write_text("")
    ctx = JobContext(job_id=1, user="alice", attempt=0, nodes=(SLOW,))
    why = publish_node(str(tmp_path / "file"), tmp_path / "job", ctx, SLOW, ranks=())
    assert why is not None and "not written" in why
