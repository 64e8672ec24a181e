"""pyslurm and the command line give the same records, on the real cluster.

On Slurm 25.11 (`minicluster up --slurm 25.11`, pyslurm 25.11.2 built against it) the same
queries go through both backends (`SNRUN_SLURM_BACKEND=cli` forces the command line) and the
records are compared field by field. Elsewhere pyslurm cannot serve (PyPI's pyslurm is for
25.11 only): the layer must then say why and answer through the command line.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time

import pytest

from slurm_supernode.slurm import jobinfo, jobs, nodes, pyslurm_probe
from slurm_supernode.slurm.job_lookup import controller_jobs

pytestmark = pytest.mark.slurm

TIMEOUT = 60
BACKEND = "SNRUN_SLURM_BACKEND"
SNRUN = [sys.executable, "-m", "slurm_supernode"]


def serves(cluster) -> bool:
    return cluster.version == (25, 11)


def through(backend: str, query, *args):
    """`query(*args)` with SNRUN_SLURM_BACKEND=backend (the probe is per configuration)."""
    old = os.environ.get(BACKEND)
    os.environ[BACKEND] = backend
    try:
        return query(*args)
    finally:
        if old is None:
            os.environ.pop(BACKEND, None)
        else:
            os.environ[BACKEND] = old


def same(info):
    """The fields both backends must agree on: all but where the record came from and the
    output path (compared on its own)."""
    return dataclasses.replace(info, source="", stdout=None)


def submit(tmp_path, body: str, *args: str) -> int:
    return jobs.submit(f"#!/bin/bash\n{body}\n", ["-o", str(tmp_path / "%j.out"), *args])


def settled(job_id: int, done) -> jobinfo.JobInfo:
    """Poll (through pyslurm) until `done(info)`: no COMPLETING flag left to race with."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        (info,) = through("pyslurm", controller_jobs, job_id)
        if done(info):
            return info
        assert time.monotonic() < deadline, f"job {job_id} still {info.state}"
        time.sleep(0.2)


def test_same_records_through_both_backends(tmp_path, slurm_cluster):
    if not serves(slurm_cluster):
        reason = pyslurm_probe.probe(dict(os.environ)).why_not
        assert reason, "pyslurm must not serve a Slurm other than 25.11"
        assert through("auto", controller_jobs, 999_999) == []  # the command line answers
        return
    running = submit(tmp_path, "sleep 300", "-N2", "-J", "cmp-running")
    held = submit(tmp_path, "true", "-N2", "--hold", "-J", "cmp held")
    failed = submit(tmp_path, "srun bash -c 'exit 5'\nexit 3", "-J", "cmp-failed")
    done = submit(tmp_path, "srun true", "-N3", "-J", "cmp-done")
    try:
        settled(running, lambda i: i.state.running)
        settled(failed, lambda i: i.state.ended and i.state.base == "FAILED")
        settled(done, lambda i: i.state.ended and i.state.base == "COMPLETED")
        for job in (running, held, failed, done):
            (fast,) = through("pyslurm", controller_jobs, job)
            (slow,) = through("cli", controller_jobs, job)
            assert (fast.source, slow.source) == ("pyslurm", "scontrol")
            # pyslurm expands the output path (like scontrol's text), data_parser's JSON keeps
            # sbatch's pattern: the same file
            assert slow.stdout and fast.stdout == slow.stdout.replace("%j", str(job))
            assert same(fast) == same(slow), job
        every_fast = {i.job_id: same(i) for i in through("pyslurm", controller_jobs)}
        every_slow = {i.job_id: same(i) for i in through("cli", controller_jobs)}
        assert {running, held, failed, done} <= set(every_fast)
        assert every_fast == every_slow
        assert through("pyslurm", controller_jobs, 999_999) == []
        # the records mean the same things
        (held_info,) = through("pyslurm", controller_jobs, held)
        assert (str(held_info.state), held_info.reason, held_info.name) == (
            "PENDING",
            "JobHeldUser",
            "cmp held",
        )
        (failed_info,) = through("pyslurm", controller_jobs, failed)
        assert (failed_info.exit_code, failed_info.ended) == (3, True)
    finally:
        for job in (running, held):
            jobs.cancel(job)
    # The two backends' node records are read one after the other: wait until no job of this
    # test still ends anywhere (a node COMPLETING in one answer and idle in the next).
    for job in (running, held, failed, done):
        settled(job, lambda i: i.ended)
    deadline = time.monotonic() + TIMEOUT
    while any("completing" in n.flags for n in through("cli", nodes.node_infos)):
        assert time.monotonic() < deadline, "nodes still COMPLETING"
        time.sleep(0.2)
    for query in (nodes.node_infos, nodes.partition_infos):
        assert through("pyslurm", query) == through("cli", query)
    some = list(slurm_cluster.nodes[1:3])
    assert through("pyslurm", nodes.node_infos, some) == through("cli", nodes.node_infos, some)
    assert [n.name for n in through("pyslurm", nodes.node_infos, some)] == some


def test_debug_names_the_backend(tmp_path, slurm_cluster):
    """`snrun --debug` says which backend answered the cluster queries (a dry run asks the
    running Slurm for nodes and partitions)."""
    script = tmp_path / "train.py"
    script.write_text("print('hi')\n")
    env = {**os.environ, BACKEND: "auto"}
    proc = subprocess.run(
        [*SNRUN, "--debug", "--dry-run", "--site", "local", "-N", "2", str(script)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("snrun: debug: Slurm queries")]
    assert lines, proc.stderr[-2000:]
    if serves(slurm_cluster):
        assert lines[0].startswith("snrun: debug: Slurm queries go through pyslurm 25.11.")
    else:
        assert "use the command line: pyslurm skipped: " in lines[0]
