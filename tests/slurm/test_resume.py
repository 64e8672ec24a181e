"""`nodes.resume` ends with a usable node and no stale reason, against a fake `scontrol` that
behaves like Slurm 24.11.5 (measured on the trixie minicluster): after State=RESUME the node is
IDLE+NOT_RESPONDING until slurmd re-registers, and the drain reason stays on the idle node
until `Reason= ` clears it. On 22.05 the reason goes with the drain."""

from __future__ import annotations

import stat

import pytest

from slurm_supernode.slurm import nodes

# The fake keeps its state in files: how many `show node` calls the node stays NOT_RESPONDING,
# and the reason. It logs every update it gets.
FAKE_SCONTROL = r"""#!/bin/bash
d="$FAKE_STATE"
if [ "$1" = update ]; then
  echo "$*" >> "$d/updates"
  case "$*" in
    *State=RESUME*) echo IDLE > "$d/state"; [ "$KEEPS_REASON" = 1 ] || : > "$d/reason" ;;
    *"Reason= "*) : > "$d/reason" ;;
  esac
  exit 0
fi
state=$(cat "$d/state"); left=$(cat "$d/left")
if [ "$state" = IDLE ] && [ "$left" -gt 0 ]; then
  echo $((left - 1)) > "$d/left"; state="IDLE+NOT_RESPONDING"
fi
reason=$(cat "$d/reason")
if [ -n "$reason" ]; then r="Reason=$reason [root@2026-11-30T16:13:03]"; else r=""; fi
echo "NodeName=n3 CPUTot=8 AvailableFeatures=sn0 Gres=gpu:8 State=$state Partitions=main $r"
"""


@pytest.fixture
def fake_node(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    path = bindir / "scontrol"
    path.write_text(FAKE_SCONTROL)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    monkeypatch.delenv("SLURM_CONF", raising=False)
    monkeypatch.setenv("FAKE_STATE", str(state))

    def setup(*, keeps_reason: bool, not_responding_polls: int) -> None:
        monkeypatch.setenv("KEEPS_REASON", "1" if keeps_reason else "0")
        (state / "state").write_text("IDLE+DRAIN\n")
        (state / "left").write_text(f"{not_responding_polls}\n")
        (state / "reason").write_text("snrun: devices: 7 of 8\n")

    return setup, state


def test_resume_like_24_11_waits_and_clears_the_stale_reason(fake_node):
    setup, state = fake_node
    setup(keeps_reason=True, not_responding_polls=3)
    (info,) = nodes.resume("n3", poll=0.01)
    assert info.usable and info.reason is None
    updates = (state / "updates").read_text().splitlines()
    assert updates == ["update NodeName=n3 State=RESUME", "update NodeName=n3 Reason= "]


def test_resume_like_22_05_touches_nothing_more(fake_node):
    setup, state = fake_node
    setup(keeps_reason=False, not_responding_polls=0)
    (info,) = nodes.resume("n3", poll=0.01)
    assert info.usable and info.reason is None
    assert (state / "updates").read_text().splitlines() == ["update NodeName=n3 State=RESUME"]


def test_resume_gives_up_waiting_and_keeps_the_reason_of_a_silent_node(fake_node):
    """A node that never answers again is returned as it is (not usable), its reason kept."""
    setup, state = fake_node
    setup(keeps_reason=True, not_responding_polls=10_000)
    (info,) = nodes.resume("n3", wait=0.2, poll=0.01)
    assert not info.usable and info.reason == "snrun: devices: 7 of 8"
    assert "Reason= " not in (state / "updates").read_text()
