"""The job's rank table merged from per-node fragments: every node writes its own, all wait,
node 0 writes one table atomically; bad values fail on every node alike, before torchrun."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from slurm_supernode.errors import InputError, JobError, PlacementError
from slurm_supernode.placement.hccl_validate import validate_rank_table
from slurm_supernode.placement.rankmap import build_rank_map
from slurm_supernode.runtime.ranktable import fragment_dir, prepare_rank_table, rank_table_mode
from tests.placement.sites import ascend_site
from tests.placement.test_hccl import hw_facts

SITE = ascend_site(2, 2)
HOSTS = [n.hostname for n in SITE.nodes]
RM = build_rank_map(SITE, HOSTS)


def reader(facts):
    def read(hostname, devices, environ):
        assert list(devices) == list(range(16))  # every device: partners (backup dies) too
        return facts[hostname]

    return read


def run_all(job_dir: Path, facts, hosts=HOSTS, timeout=20.0, attempt=0):
    def one(host):
        try:
            return prepare_rank_table(
                job_dir, SITE, RM, host, job_id=7, attempt=attempt, environ={},
                read=reader(facts), timeout=timeout, poll=0.02,
            )  # fmt: skip
        except Exception as exc:
            return exc

    with ThreadPoolExecutor(len(hosts)) as pool:
        return list(pool.map(one, hosts))


def test_every_node_gets_the_one_merged_table(tmp_path):
    results = run_all(tmp_path, hw_facts(SITE))
    paths = {r[0] for r in results}
    assert paths == {tmp_path / "rank_table.7.0.json"}
    table = json.loads(next(iter(paths)).read_text())
    assert table["version"] == "1.2" and validate_rank_table(table) == []
    assert int(table["server_count"]) == 4
    frags = sorted(p.name for p in fragment_dir(tmp_path, 7, 0).iterdir())
    assert frags == sorted(f"{h}.json" for h in HOSTS)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temps


def test_a_mismatch_fails_on_every_node_with_the_same_line(tmp_path):
    def ip(node, d):
        return "10.250.0.1" if (node.hostname, d) == (HOSTS[3], 5) else node.device_ips[d]

    results = run_all(tmp_path, hw_facts(SITE, ip=ip))
    assert all(isinstance(r, PlacementError) for r in results)
    assert len({str(r) for r in results}) == 1
    assert f"{HOSTS[3]} device 5 IP: site" in str(results[0])
    assert not (tmp_path / "rank_table.7.0.json").exists()


def test_a_node_that_never_writes_times_out_clearly(tmp_path):
    results = run_all(tmp_path, hw_facts(SITE), hosts=HOSTS[:3], timeout=0.5)
    assert all(isinstance(r, JobError) for r in results)
    assert f"no hardware values from {HOSTS[3]} after 0.5s (3 of 4 nodes" in str(results[0])


def test_attempts_do_not_share_fragments(tmp_path):
    run_all(tmp_path, hw_facts(SITE))
    with pytest.raises(JobError, match="no hardware values from"):
        prepare_rank_table(
            tmp_path, SITE, RM, HOSTS[0], job_id=7, attempt=1, environ={},
            read=reader(hw_facts(SITE)), timeout=0.2, poll=0.02,
        )  # fmt: skip


def test_forced_version_and_notes(tmp_path):
    from slurm_supernode.runtime.ranktable import prepare_rank_table as prep

    facts = hw_facts(SITE)
    path, notes = prep(
        tmp_path, SITE, build_rank_map(SITE, HOSTS[:1]), HOSTS[0], job_id=1, attempt=0,
        environ={}, read=reader(facts), timeout=1, version="1.0",
    )  # fmt: skip
    assert json.loads(path.read_text())["version"] == "1.0" and notes == ()
    # the hardware gave no IPs (no hccn_tool, no hccn.conf): the site's are used, and said so
    no_ip = {
        h: replace(f, devices=tuple(replace(d, device_ip=None) for d in f.devices),
                   ip_note="hccn_tool not found and no /etc/hccn.conf")
        for h, f in facts.items()
    }  # fmt: skip
    results = run_all(tmp_path / "b", no_ip)
    notes = results[0][1]
    assert len(notes) == 1 and notes[0].startswith(
        f"device IPs from the site config, not the hardware, on: {HOSTS[0]} (hccn_tool not found"
    )


def test_rank_table_modes(tmp_path, capsys):
    from slurm_supernode.runtime.agent import ascend_rank_table

    assert rank_table_mode({}) == "auto" and rank_table_mode({"SNRUN_RANK_TABLE": "1.2"}) == "1.2"
    with pytest.raises(InputError, match="SNRUN_RANK_TABLE: 'v2' is not a rank table mode"):
        rank_table_mode({"SNRUN_RANK_TABLE": "v2"})
    env = ascend_rank_table(tmp_path, SITE, RM, HOSTS[0], {"SNRUN_RANK_TABLE": "off"}, 1, 0)
    assert env == {} and not list(tmp_path.iterdir())
    assert "no HCCL rank table (SNRUN_RANK_TABLE=off)" in capsys.readouterr().err
