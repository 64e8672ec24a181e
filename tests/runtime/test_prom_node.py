"""The agent's textfile publisher: published at once and every period, removed when stopped;
nothing runs without a directory; a failure is said once and the publisher goes on."""

from __future__ import annotations

import time

from slurm_supernode.runtime.prom_node import node_context, start_publishing
from tests.observe.attempt_fixture import SLOW, write_attempt
from tests.waiting import wait_until


def test_published_then_removed(tmp_path):
    write_attempt(tmp_path / "job")
    prom = tmp_path / "prom"
    ctx = node_context(4242, 0, SLOW, "sn1")
    finish = start_publishing(str(prom), tmp_path / "job", ctx, SLOW, [6, 7], period=0.2)
    path = prom / f"snrun-4242-{SLOW}.prom"
    assert wait_until(path.exists)
    text = path.read_text()
    assert 'snrun_rank_step_seconds{job="4242",user=' in text and 'rank="7"' in text
    finish()
    assert not path.exists()


def test_nothing_without_a_directory(tmp_path):
    finish = start_publishing("", tmp_path, node_context(1, 0, "n", "s"), "n", [], period=1)
    finish()
    assert list(tmp_path.iterdir()) == []


def test_a_failure_is_said_once(tmp_path, capfd):
    (tmp_path / "file").write_text("")
    ctx = node_context(1, 0, "n", "s")
    finish = start_publishing(str(tmp_path / "file"), tmp_path, ctx, "n", [], period=0.05)
    assert wait_until(lambda: "not written" in capfd.readouterr().err or False)
    time.sleep(0.3)  # several more periods: not said again
    finish()
    assert "not written" not in capfd.readouterr().err


def test_the_period_is_the_samplers():
    from slurm_supernode.runtime.prom_node import period

    assert period(10.0, None) == 10.0 and period(10.0, "2.5") == 2.5 and period(10.0, "0") == 0
    assert period(10.0, "x") == 10.0 and period(10.0, "-1") == 10.0 and period(10.0, "inf") == 10
