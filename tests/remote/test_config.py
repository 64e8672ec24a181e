"""clusters.yaml: the clusters by name, and every problem at its file:line:col."""

from __future__ import annotations

import pytest

from slurm_supernode.errors import ConfigError, InputError
from slurm_supernode.remote.config import clusters_file, find_cluster, load_clusters
from slurm_supernode.user_settings import SnrunSettings


def _write(tmp_path, text):
    path = tmp_path / "clusters.yaml"
    path.write_text(text)
    return path


def test_a_full_entry(tmp_path):
    path = _write(
        tmp_path,
        """clusters:
  lab:
    destination: me@lab-login
    snrun: /opt/py/bin/python3 -m slurm_supernode
    site: lab
    jobs_dir: /scratch/me/jobs
    path: [/opt/slurm/bin, /opt/tools]
    env: {SLURM_CONF: /etc/slurm/slurm.conf}
    ssh_options: [-o, ProxyJump=gw]
    code_dir: /scratch/me/code
  mini:
    destination: mini
""",
    )
    found = load_clusters(path)
    lab = found["lab"]
    assert lab.destination == "me@lab-login"
    assert lab.snrun == ("/opt/py/bin/python3", "-m", "slurm_supernode")
    assert lab.path == ("/opt/slurm/bin", "/opt/tools")
    assert lab.env == (("SLURM_CONF", "/etc/slurm/slurm.conf"),)
    assert lab.ssh_options == ("-o", "ProxyJump=gw")
    assert lab.source == f"{path}:2"
    assert found["mini"].snrun == ("snrun",) and found["mini"].site is None


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("clusters:\n  lab:\n    destinaton: x\n", ":3:5:", "unknown key 'destinaton'"),
        ("clusters:\n  lab:\n    snrun: snrun\n", ":2:3:", "no `destination:`"),
        ("clusters:\n  lab:\n    destination: -oProxyCommand=x\n", ":3:18:", "starts with '-'"),
        ("clusters:\n  lab:\n    destination: [a]\n", ":3:18:", "non-empty string"),
        ("clusters:\n  lab:\n    destination: a\n    env: {1X: y}\n", ":4:11:", "not a variable"),
        ('clusters:\n  lab:\n    destination: a\n    snrun: "\'x"\n', ":4:12:", "quotation"),
        ("clusters:\n  'a b':\n    destination: a\n", ":2:3:", "bad cluster name"),
        ("clusters: [\n", ":2:1:", "not YAML"),
        ("lab:\n  destination: a\n", ":1:1:", "unknown key 'lab'"),
        ("", ":1:1:", "empty file"),
    ],
)
def test_problems_at_their_line(tmp_path, text, where, what):
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_clusters(path)
    message = str(err.value)
    assert message.startswith(str(path) + where), message
    assert what in message


def test_every_problem_listed(tmp_path):
    path = _write(tmp_path, "clusters:\n  a:\n    x: 1\n  b:\n    y: 2\n")
    with pytest.raises(ConfigError) as err:
        load_clusters(path)
    assert len(err.value.problems) == 4  # two unknown keys, two missing destinations


def test_the_file_is_per_user_xdg(tmp_path):
    assert clusters_file(SnrunSettings(config_home=str(tmp_path))) == (
        tmp_path / "snrun" / "clusters.yaml"
    )
    assert clusters_file(SnrunSettings(clusters_file="/x/c.yaml")).as_posix() == "/x/c.yaml"
    assert str(clusters_file(SnrunSettings())).endswith(".config/snrun/clusters.yaml")


def test_unknown_name_and_missing_file(tmp_path):
    path = _write(tmp_path, "clusters:\n  lab:\n    destination: a\n")
    with pytest.raises(InputError, match=r"no cluster 'nope' .*known: lab"):
        find_cluster("nope", SnrunSettings(clusters_file=str(path)))
    with pytest.raises(InputError, match="no clusters file at"):
        find_cluster("lab", SnrunSettings(clusters_file=str(tmp_path / "none.yaml")))


def test_the_documented_example_loads(tmp_path):
    """docs/remote.md's clusters.yaml is a file snrun reads as the page says."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "remote.md").read_text()
    (example,) = re.findall(r"```yaml\n(.*?)```", page, re.S)
    found = load_clusters(_write(tmp_path, example))
    assert sorted(found) == ["big", "lab"]
    big = found["big"]
    assert big.destination == "big-login" and big.snrun == ("/opt/snrun/bin/snrun",)
    assert big.ssh_options == ("-J", "gateway.big.example") and big.path == ("/opt/slurm/bin",)
    assert found["lab"].code_dir == ".cache/slurm-supernode/code"
