"""Detecting `--requeue=expedite` (Slurm 25.11+): the controller must allow it
(`SlurmctldParameters=enable_expedited_requeue`) and the client must have the option; read from
the running cluster (fake binaries here), never from a version string."""

from __future__ import annotations

import pytest

from slurm_supernode.slurm.version import SlurmVersion, detect_features, features_from

HELP_2605 = (  # sbatch --help of 26.05.5 (Debian forky), the line that matters
    "      --requeue[=expedite]    if set, permit the job to be requeued\n"
)
HELP_2411 = "      --requeue               if set, permit the job to be requeued\n"


@pytest.mark.parametrize(
    ("params", "help_text", "ok"),
    [
        ("enable_expedited_requeue", HELP_2605, True),
        ("enable_configless,enable_expedited_requeue", HELP_2605, True),
        ("enable_expedited_requeue", HELP_2411, False),  # a client without the option
        ("enable_configless", HELP_2605, False),  # 26.05 without the parameter: refused
        ("(null)", HELP_2605, False),
        (None, HELP_2605, False),
    ],
)
def test_expedite_needs_the_parameter_and_the_client_option(params, help_text, ok):
    config = {"TopologyPlugin": "topology/tree"}
    if params is not None:
        config["SlurmctldParameters"] = params
    feats = features_from(SlurmVersion(26, 5, 5), config, sbatch_help=help_text)
    assert feats.expedited_requeue is ok


def test_a_new_version_alone_is_not_enough():
    config = {"TopologyPlugin": "topology/tree"}
    assert not features_from(SlurmVersion(26, 5, 5), config).expedited_requeue


def write_cluster(fake_bin, tmp_path, params: str) -> None:
    fake_bin("sinfo", "echo 'slurm 26.05.5'")
    fake_bin(
        "scontrol",
        f"""case "$*" in
  "show config") printf 'TopologyPlugin = topology/tree\\nSlurmctldParameters = {params}\\n' ;;
  *) exit 0 ;;
esac""",
    )
    fake_bin("sbatch", f'echo "$*" >> {tmp_path}/sbatch-calls; printf "%s" "{HELP_2605}"')


def test_detect_reads_config_then_asks_the_client(fake_bin, tmp_path):
    write_cluster(fake_bin, tmp_path, "enable_expedited_requeue")
    assert detect_features().expedited_requeue
    assert (tmp_path / "sbatch-calls").read_text().split() == ["--help"]


def test_detect_without_the_parameter_never_runs_sbatch(fake_bin, tmp_path):
    write_cluster(fake_bin, tmp_path, "(null)")
    assert not detect_features().expedited_requeue
    assert not (tmp_path / "sbatch-calls").exists()


@pytest.mark.parametrize("params", ["enable_expedited_requeue", "(null)"])
def test_facts_carry_detection_to_the_plan(fake_bin, tmp_path, monkeypatch, params):
    """gather_facts (the one side-effecting input of the plan) passes what was detected on."""
    from slurm_supernode.launch.facts import gather_facts
    from slurm_supernode.slurm import nodes
    from tests.placement.sites import make_site

    write_cluster(fake_bin, tmp_path, params)
    monkeypatch.setattr(nodes, "node_infos", lambda *a, **k: [])
    monkeypatch.setattr(nodes, "partition_infos", lambda *a, **k: [])
    facts = gather_facts(make_site(2, 4, 8), required=True)
    assert facts is not None and facts.expedited_requeue is (params != "(null)")


@pytest.mark.parametrize(
    ("proctrack", "survives"),
    [("proctrack/cgroup", False), ("proctrack/linuxproc", True), ("proctrack/pgid", True)],
)
def test_the_releaser_survives_except_under_proctrack_cgroup(fake_bin, proctrack, survives):
    from slurm_supernode.slurm.version import detached_process_survives

    fake_bin("scontrol", f"echo 'ProctrackType           = {proctrack}'")
    assert detached_process_survives() is survives
