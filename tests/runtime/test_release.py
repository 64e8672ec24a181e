from __future__ import annotations

import dataclasses

import pytest

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
    # a job of two super nodes (3 + 3 of 4) that lost one node: pinning it to one super node
    # would leave it pending forever (BadConstraints)
    assert preferred_supernode(spared(1), ["n0", "n1", "n2", "n4", "n5", "n6"], ("n1",), 0) is None


# The releaser against a fake scontrol (22.05's text form): each `show job` answers the next
# state of the list ("STATE" or "STATE/REASON"), every call is logged.
def fake_scontrol(tmp_path, monkeypatch, states: list[str], update_rc: int = 0):
    import stat

    bindir = tmp_path / "bin"
    bindir.mkdir()
    log, seq = tmp_path / "calls", tmp_path / "states"
    seq.write_text("\n".join(states) + "\n")
    script = bindir / "scontrol"
    script.write_text(
        f"""#!/bin/bash
echo "$*" >> {log}
case "$*" in
  "show job --json"*) echo "scontrol: unrecognized option '--json'" >&2; exit 1 ;;
  "show job -o"*)
    s=$(head -n1 {seq}); [ "$(wc -l < {seq})" -gt 1 ] && sed -i 1d {seq}
    r=${{s#*/}}; [ "$r" = "$s" ] && r=None; s=${{s%/*}}
    echo "JobId=500 JobName=t JobState=$s Reason=$r ExitCode=0:0 Restarts=1 NumNodes=2" ;;
  update*) exit {update_rc} ;;
esac
"""
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    sacct = bindir / "sacct"  # no completion log here
    sacct.write_text("#!/bin/bash\nexit 1\n")
    sacct.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    monkeypatch.delenv("SLURM_CONF", raising=False)
    return log


def test_held_release_waits_for_pending_excludes_then_lifts_the_hold(tmp_path, monkeypatch):
    from slurm_supernode.runtime.release import release

    log = fake_scontrol(tmp_path, monkeypatch, ["RUNNING", "COMPLETING", "PENDING"])
    out = release(500, ["n1", "n2"], held=True)
    calls = [c for c in log.read_text().splitlines() if not c.startswith("show job")]
    assert calls == ["update JobId=500 ExcNodeList=n[1-2]", "release 500"]
    assert out == "job 500 released from its hold: excluded n[1-2]"


def test_held_job_is_released_even_when_the_exclusion_fails(tmp_path, monkeypatch):
    """Never leave the job held for good: the hold is lifted, the error still reported."""
    from slurm_supernode.errors import SlurmError
    from slurm_supernode.runtime.release import release

    log = fake_scontrol(tmp_path, monkeypatch, ["PENDING"], update_rc=1)
    with pytest.raises(SlurmError):
        release(500, ["n1"], held=True)
    assert log.read_text().splitlines()[-1] == "release 500"


def test_ended_job_is_not_released(tmp_path, monkeypatch):
    from slurm_supernode.runtime.release import release

    log = fake_scontrol(tmp_path, monkeypatch, ["CANCELLED"])
    assert release(500, ["n1"], held=True) == "job 500 is CANCELLED: nothing to release"
    assert all(c.startswith("show job") for c in log.read_text().splitlines())


def test_release_waits_for_the_begin_time_slurm_sets_after_the_old_run_completed(
    tmp_path, monkeypatch
):
    """A requeued job is PENDING without a reason while its old run still completes; Slurm sets
    the BeginTime (cred_expire) only afterwards: releasing then, not at the first PENDING
    (which left every requeue on 22.05 and 24.11 waiting for cred_expire)."""
    from slurm_supernode.runtime.release import release

    states = ["RUNNING", "PENDING", "PENDING", "PENDING/BeginTime", "PENDING", "RUNNING"]
    log = fake_scontrol(tmp_path, monkeypatch, states)
    assert release(500, ["n3"]) == "job 500 released: excluded n3"
    calls = [c for c in log.read_text().splitlines() if not c.startswith("show job")]
    assert calls[0] == "update JobId=500 ExcNodeList=n3"
    assert calls[1].startswith("update JobId=500 StartTime=now")
