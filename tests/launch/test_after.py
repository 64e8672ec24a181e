"""--after JOB[:ok|any|notok]: parsing, the dependency text, and which chain ends satisfy it."""

from __future__ import annotations

import pytest

from slurm_supernode.errors import InputError
from slurm_supernode.launch.after import After, check_user_dependency, dependency, parse_after


@pytest.mark.parametrize(
    ("text", "job", "when"),
    [
        ("1234", "1234", "ok"),
        ("1234:notok", "1234", "notok"),
        ("1234_3:any", "1234_3", "any"),
        ("/jobs/a-1:ok", "/jobs/a-1", "ok"),
        ("/jobs/a:1", "/jobs/a:1", "ok"),  # a path with a colon is a path
    ],
)
def test_parse(text, job, when):
    assert parse_after(text) == After(job, when)


@pytest.mark.parametrize("text", ["1234:okay", ":ok", "1234:done"])
def test_bad_after_is_refused(text):
    with pytest.raises(InputError) as err:
        parse_after(text)
    assert err.value.where == "--after" and err.value.hint


def test_condition_against_chain_ends():
    ok, notok, anyway = After("1", "ok"), After("1", "notok"), After("1", "any")
    assert ok.satisfied_by("COMPLETED") and not ok.satisfied_by("FAILED")
    assert notok.satisfied_by("FAILED") and notok.satisfied_by("CANCELLED")
    assert not notok.satisfied_by("COMPLETED")
    assert all(anyway.satisfied_by(s) for s in ("COMPLETED", "FAILED", "CANCELLED"))
    with pytest.raises(InputError):
        After("1", "done")


def test_dependency_text_joins_the_users_own_with_and():
    assert dependency("ok", ["12"]) == "afterok:12"
    assert dependency("any", ["12", "15"], "singleton") == "afterany:12:15,singleton"
    check_user_dependency("afterok:3,singleton")
    with pytest.raises(InputError, match="either-or"):
        check_user_dependency("afterok:3?afterany:4")
