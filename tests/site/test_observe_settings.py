"""The site's ``observe:`` section: defaults, values, and errors at their line."""

from __future__ import annotations

from pathlib import Path

from slurm_supernode.site.loader import parse_site
from slurm_supernode.site.model import ObserveSettings

LOCAL = (Path(__file__).resolve().parents[2] / "site-configs" / "local.yaml").read_text()


def test_defaults_and_values():
    site, problems = parse_site(LOCAL, "t.yaml")
    assert not problems and site.observe == ObserveSettings()
    assert site.observe.sample_period == 10.0
    text = LOCAL + "observe:\n  sample_period: 2.5\n  slow_windows: 4\n  profile_steps: 0\n"
    site, problems = parse_site(text, "t.yaml")
    assert not problems, [str(p) for p in problems]
    assert (site.observe.sample_period, site.observe.slow_windows) == (2.5, 4)
    assert site.observe.profile_steps == 0


def test_bad_values_are_named_at_their_line():
    n = LOCAL.count("\n")
    text = LOCAL + "observe:\n  sample_period: 0\n  slow_windows: 1.5\n  colour: red\n"
    _, problems = parse_site(text, "t.yaml")
    got = {(p.line, p.message.split(",")[0]) for p in problems}
    assert (n + 2, "observe.sample_period must be > 0") in got
    assert any(line == n + 3 and "observe.slow_windows" in m for line, m in got)
    assert any(line == n + 4 and "colour" in m for line, m in got)
