from __future__ import annotations

import dataclasses

from slurm_supernode.runtime.release import Preference, preferred_supernode
from tests.placement.sites import make_site


def spared(n: int):
    s = make_site(2, 4, 8)
    return dataclasses.replace(
        s, supernodes=tuple(dataclasses.replace(sn, spares=n) for sn in s.supernodes)
    )


def test_stay_in_the_supernode_when_its_spares_cover_the_loss() -> None:
    hosts = ["n0", "n1", "n2"]  # a job of 3 on sn00 (one spare)
    assert preferred_supernode(spared(1), hosts, ("n1",), 0) == Preference(
        "sn00", ("n0", "n1", "n2", "n3"), 3
    )


def test_no_preference_without_spares_for_het_jobs_or_several_supernodes() -> None:
    assert preferred_supernode(spared(0), ["n0", "n1", "n2", "n3"], ("n1",), 0) is None
    assert preferred_supernode(spared(1), ["n0", "n1", "n2"], ("n1", "n2"), 0) is None
    assert preferred_supernode(spared(1), ["n0", "n1", "n2"], ("n1",), 2) is None
    assert preferred_supernode(spared(1), ["n0", "n1", "n2"], ("n1", "n5"), 0) is None
