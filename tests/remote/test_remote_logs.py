"""`logs -f` across a dropped connection: started again, the lines already shown skipped."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from slurm_supernode.api import remote_logs
from slurm_supernode.remote.failures import RemoteError, RemoteErrorKind


class FakeTransport:
    """Each run prints lines 0..N-1 of a growing log; the planned runs drop after some."""

    def __init__(self, plan):
        self.plan = list(plan)  # per run: (lines printed, then the error or None)
        self.cluster = SimpleNamespace(name="lab")
        self.runs = []

    def lines(self, argv):
        self.runs.append(list(argv))
        count, error = self.plan.pop(0)
        for i in range(count):
            yield f"line {i}\n".encode()
        if error is not None:
            raise error


def _drop():
    return RemoteError("gone", kind=RemoteErrorKind.DROPPED)


@pytest.fixture(autouse=True)
def no_wait(monkeypatch):
    monkeypatch.setattr(remote_logs.time, "sleep", lambda s: None)


def test_each_line_once_across_drops():
    t = FakeTransport([(3, _drop()), (5, _drop()), (8, None)])
    said = []
    out = list(remote_logs.follow_lines(t, ["logs", "-f", "7"], reconnect=True, say=said.append))
    assert out == [f"line {i}" for i in range(8)]
    assert len(t.runs) == 3 and all(r == ["logs", "-f", "7"] for r in t.runs)
    assert said[0] == "connection to lab dropped; reconnecting in 1 s"
    assert said[1] == said[0]  # lines got through in between: the back-off starts again


def test_an_unreachable_host_while_reconnecting_is_retried_not_at_first():
    unreachable = RemoteError("down", kind=RemoteErrorKind.UNREACHABLE)
    t = FakeTransport([(2, _drop()), (0, unreachable), (4, None)])
    assert (
        len(
            list(
                remote_logs.follow_lines(t, ["logs", "-f", "1"], reconnect=True, say=lambda s: None)
            )
        )
        == 4
    )
    first = FakeTransport([(0, RemoteError("down", kind=RemoteErrorKind.UNREACHABLE))])
    with pytest.raises(RemoteError, match="down"):
        list(remote_logs.follow_lines(first, ["logs", "-f", "1"], reconnect=True))


def test_other_failures_and_no_follow_are_not_retried():
    failed = RemoteError("no job", kind=RemoteErrorKind.FAILED)
    with pytest.raises(RemoteError, match="no job"):
        list(
            remote_logs.follow_lines(
                FakeTransport([(1, failed)]), ["logs", "-f", "1"], reconnect=True
            )
        )
    with pytest.raises(RemoteError, match="gone"):
        list(
            remote_logs.follow_lines(FakeTransport([(1, _drop())]), ["logs", "1"], reconnect=False)
        )


def test_with_tail_the_overlap_is_said():
    t = FakeTransport([(2, _drop()), (2, None)])
    said = []
    out = list(
        remote_logs.follow_lines(
            t, ["logs", "-f", "--tail", "2", "1"], reconnect=True, say=said.append
        )
    )
    assert out == ["line 0", "line 1", "line 0", "line 1"]
    assert "lines may show twice" in said[0]
