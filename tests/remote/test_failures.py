"""ssh's failures said in words, from ssh's own messages (OpenSSH 9's wording)."""

from __future__ import annotations

import pytest

from slurm_supernode.remote.failures import RemoteErrorKind, ssh_failure, trim
from slurm_supernode.remote.ssh import _older, split_stderr


@pytest.mark.parametrize(
    ("stderr", "started", "kind"),
    [
        ("ssh: connect to host 127.0.0.1 port 1: Connection refused\n", False, "UNREACHABLE"),
        (
            "ssh: Could not resolve hostname nohost: Name or service not known\n",
            False,
            "UNREACHABLE",
        ),
        ("root@127.0.0.1: Permission denied (publickey).\n", False, "AUTH"),
        ("Host key verification failed.\n", False, "HOST_KEY"),
        ("client_loop: send disconnect: Broken pipe\n", True, "DROPPED"),
        ("Connection to 127.0.0.1 closed by remote host.\n", False, "DROPPED"),
        ("the connection ended without a word", True, "DROPPED"),
        ("something new\n", False, "SSH"),
    ],
)
def test_kinds(stderr, started, kind):
    err = ssh_failure("lab", "login", stderr, started=started)
    assert err.kind is RemoteErrorKind[kind]
    assert str(err).startswith("cluster 'lab' (login): ")


def test_ssh_lines_are_told_apart_from_the_remote_commands():
    ours, theirs = split_stderr(
        "snrun status: error: no job 7\nssh: connect to host x port 2: Connection refused\n"
    )
    assert theirs == "snrun status: error: no job 7\n" and ours.startswith("ssh: connect")


def test_trim_keeps_the_end_on_one_line():
    text = "\n".join(f"line {i}" for i in range(200)) + "\nthe error\n"
    out = trim(text, 50)
    assert "\n" not in out and out.endswith("the error") and len(out) <= 53


def test_versions():
    assert _older("0.1.0", "0.2.0") is True
    assert _older("0.2.0", "0.2.0") is False
    assert _older("0.10.1.dev3", "0.2.0") is False
    assert _older("garbage", "0.2.0") is None
