"""--network=unique-channel-per-segment: asked where the site says per_segment AND the running
Slurm gives per-segment channels (detected), only on a request with segments."""

from __future__ import annotations

import dataclasses

from slurm_supernode.launch.imex_request import PER_SEGMENT
from slurm_supernode.launch.jobspec import JobSpec
from slurm_supernode.launch.request import ClusterFacts, plan_request
from slurm_supernode.site.model import ImexSettings, SlurmSettings
from slurm_supernode.slurm.version import SlurmVersion, features_from
from tests.placement.sites import make_site

IMEX = {"SwitchType": "switch/nvidia_imex", "TopologyPlugin": "topology/block"}


def site(per_segment: bool = True, imex: bool = True):
    s = make_site(2, 4, 8, 2)
    return dataclasses.replace(
        s,
        slurm=SlurmSettings(partition="main", strategy="block"),
        imex_channels=imex,
        imex=ImexSettings(per_segment=per_segment),
    )


def facts(version: tuple[int, int, int], config: dict[str, str]) -> ClusterFacts:
    feats = features_from(SlurmVersion(*version), config)
    return ClusterFacts(
        version=version,
        topology_plugin="topology/block",
        supports_segment=True,
        channel_per_segment=feats.channel_per_segment,
    )


def test_detected_from_the_plugin_and_the_release():
    assert features_from(SlurmVersion(25, 11, 7), IMEX).channel_per_segment
    assert features_from(SlurmVersion(26, 5, 5), IMEX).channel_per_segment
    old = features_from(SlurmVersion(24, 11, 5), IMEX)
    assert old.imex_switch and not old.channel_per_segment
    plain = features_from(SlurmVersion(26, 5, 5), {"TopologyPlugin": "topology/block"})
    assert not plain.imex_switch and not plain.channel_per_segment


def test_asked_where_site_and_slurm_agree():
    spec = JobSpec(program="t.py", supernodes=2)
    req = plan_request(spec, site(), facts((25, 11, 7), IMEX))
    assert PER_SEGMENT in req.job_args and "--segment=4" in req.components[0]
    # the site does not want it / says no channels at all
    assert PER_SEGMENT not in plan_request(spec, site(False), facts((25, 11, 7), IMEX)).job_args
    no_imex = plan_request(spec, site(imex=False), facts((25, 11, 7), IMEX))
    assert PER_SEGMENT not in no_imex.job_args


def test_not_asked_where_slurm_cannot_and_the_plan_says_so():
    spec = JobSpec(program="t.py", supernodes=2)
    req = plan_request(spec, site(), facts((24, 11, 5), IMEX))
    assert PER_SEGMENT not in req.job_args
    assert any("one IMEX channel per segment" in n and "24.11.5" in n for n in req.notices)
    no_plugin = plan_request(spec, site(), facts((26, 5, 5), {}))
    assert PER_SEGMENT not in no_plugin.job_args
    unreachable = plan_request(spec, site(), None)
    assert PER_SEGMENT not in unreachable.job_args
