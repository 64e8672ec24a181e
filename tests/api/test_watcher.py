"""The watcher: one Slurm query per poll whatever the number of jobs watched, and polls that
come less often while nothing changes. Slurm is a fake ``scontrol`` on PATH answering
``show job --json`` from a file the test rewrites (the record format recorded from 24.11)."""

from __future__ import annotations

import itertools

from slurm_supernode.api.watcher import Backoff, Watcher


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_two_hundred_jobs_cost_one_query_per_poll(slurm):
    ids = list(range(5000, 5200))
    slurm.set_jobs({i: "PENDING" for i in ids})
    clock = Clock()
    watcher = Watcher(clock=clock)
    watcher.watch(ids)
    for poll in range(1, 4):
        clock.now += watcher.interval  # the next poll is due
        states = {i: str(watcher.record(i).state) for i in ids}  # every job asks
        assert set(states.values()) == {"PENDING"}
        assert slurm.calls() == ["show job --json"] * poll  # one query served all 200
    slurm.set_jobs({i: "RUNNING" for i in ids})
    assert watcher.record(ids[0]).state.base == "PENDING"  # not due: the last answer
    assert len(slurm.calls()) == 3
    clock.now += watcher.interval
    assert {str(watcher.record(i).state) for i in ids} == {"RUNNING"}
    assert len(slurm.calls()) == 4


def test_interval_grows_while_nothing_changes_and_resets_on_a_change(slurm):
    slurm.set_jobs({7: "PENDING", 8: "PENDING"})
    clock = Clock()
    watcher = Watcher(Backoff(first=2.0, most=60.0, factor=1.5), clock=clock)
    watcher.watch([7, 8])
    seen = []
    for _ in range(12):
        watcher.poll()
        seen.append(watcher.interval)
        clock.now += watcher.interval
    # the first poll sees the jobs for the first time (a change); then each quiet poll waits
    # longer, up to a minute
    assert seen[0] == 2.0
    assert all(b > a for a, b in itertools.pairwise(seen) if a < 60.0)
    assert seen[1] == 3.0 and seen[-1] == 60.0
    assert watcher.until_next_poll() == 0.0  # the clock moved on by the interval
    clock.now -= 15
    assert watcher.until_next_poll() == 15.0
    slurm.set_jobs({7: "RUNNING", 8: "PENDING"})
    watcher.poll()
    assert watcher.interval == 2.0  # a job changed: look again soon
    watcher.poll()
    assert watcher.interval == 3.0
    watcher.watch([9])  # a new job: soon too
    assert watcher.interval == 2.0


def test_one_watched_job_is_asked_for_alone(slurm):
    slurm.set_jobs({7: "RUNNING"})
    watcher = Watcher(clock=Clock())
    assert str(watcher.record(7).state) == "RUNNING"
    assert slurm.calls() == ["show job --json 7"]


def test_a_job_the_controller_forgot_is_looked_up_once(slurm):
    """Ended longer ago than MinJobAge: accounting is asked once, never again."""
    slurm.set_jobs({7: "RUNNING"})
    looked_up = []

    def lookup(job_id):
        looked_up.append(job_id)
        return None

    clock = Clock()
    watcher = Watcher(clock=clock, lookup=lookup)
    watcher.watch([7, 8])
    for _ in range(3):
        watcher.poll()
        clock.now += watcher.interval
    assert looked_up == [8]
    assert watcher.record(8) is None and str(watcher.record(7).state) == "RUNNING"
    assert looked_up == [8]  # a fourth poll (due), still no second look-up
    assert len(slurm.calls()) == 4
