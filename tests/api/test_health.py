"""Node health from Python: the checks' outcome, and drain / resume through the Slurm layer
(NHC's convention) with the Slurm calls faked; tests/integration/test_ops_slurm.py drains a
real node."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from slurm_supernode.api.health import HealthOptions, check_node
from slurm_supernode.errors import InputError
from tests.health.test_cli import _site


@pytest.fixture
def slurm_node(monkeypatch):
    from slurm_supernode.slurm import nodes

    node = SimpleNamespace(name="n1", drained=False, reason=None, calls=[])

    def drain(name, reason):
        node.calls.append(("drain", name, reason))

    monkeypatch.setattr(nodes, "node_infos", lambda name: [node] if name == "n1" else [])
    monkeypatch.setattr(nodes, "drain", drain)
    monkeypatch.setattr(nodes, "resume", lambda name: node.calls.append(("resume", name)))
    return node


def test_critical_node_is_drained_with_the_snrun_reason(tmp_path, slurm_node):
    site = _site(tmp_path, 3)  # 3 of 4 devices
    outcome = check_node(HealthOptions(node="n1"), site=site, drain=True)
    assert outcome.status == 2 and outcome.status_name == "CRITICAL" and outcome.action == "drain"
    ((what, name, reason),) = slurm_node.calls
    assert (what, name) == ("drain", "n1") and reason.startswith("snrun: devices: 3 of 4")
    assert outcome.to_dict()["checks"][0]["name"] == "devices"


def test_an_admin_drain_keeps_its_reason_and_only_snrun_drains_are_resumed(tmp_path, slurm_node):
    (tmp_path / "bad").mkdir()
    (tmp_path / "good").mkdir()
    bad, good = _site(tmp_path / "bad", 3), _site(tmp_path / "good", 4)
    slurm_node.drained, slurm_node.reason = True, "admin: replace fan"
    outcome = check_node(HealthOptions(node="n1"), site=bad, drain=True)
    assert outcome.action is None and "reason kept" in (outcome.note or "")
    outcome = check_node(HealthOptions(node="n1"), site=good, resume_ok=True)
    assert outcome.status == 0 and outcome.action is None and slurm_node.calls == []
    slurm_node.reason = "snrun: devices: 3 of 4"
    outcome = check_node(HealthOptions(node="n1"), site=good, resume_ok=True)
    assert outcome.action == "resume" and slurm_node.calls == [("resume", "n1")]


def test_bad_requests_are_input_errors(tmp_path, slurm_node):
    site = _site(tmp_path, 4)
    with pytest.raises(InputError, match="needs HealthOptions.min_free_gb") as err:
        check_node(HealthOptions(node="n1", paths=("/tmp",)), site=site)
    assert err.value.where == "HealthOptions.paths"  # the API's words, not --path
    with pytest.raises(InputError, match="not both") as err:
        check_node(HealthOptions(node="n1"), site=site, drain=True, resume_ok=True)
    assert (err.value.where, err.value.hint) == ("drain", "drop resume_ok")
    with pytest.raises(InputError, match="Slurm has no node 'zz'"):
        check_node(HealthOptions(node="zz"), site=site, drain=True)


def test_no_node_name_means_this_host(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURMD_NODENAME", "n0")
    outcome = check_node(HealthOptions(node=""), site=_site(tmp_path, 4))
    assert outcome.node == "n0" and outcome.status == 0 and outcome.action is None
